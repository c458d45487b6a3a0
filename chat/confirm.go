package chat

import (
	"context"
	"strings"
)

// confirmation is a y/N question that the next line the user types
// answers (/restore's "Restore? [y/N]", /delete's "Delete? [y/N]"): in
// line mode drainLines hands it that line, on a terminal run does; its
// input line is labelled y/N>, not a prompt's label, while it waits.
type confirmation struct {
	// yes is what a yes does.
	yes func(ctx context.Context)
	// no is said for any other answer, Enter alone included: "Not
	// restored."
	no string
}

// askConfirm asks question (its last line, "Restore? [y/N]") and holds
// c until the next line answers it.
func (r *repl) askConfirm(question string, c *confirmation) {
	r.confirm = c
	r.note(styleWarn, question)
}

// answerConfirm takes line as the answer to the confirmation asked.
func (r *repl) answerConfirm(ctx context.Context, line string) {
	c := r.confirm
	r.confirm = nil
	r.echo("", line)
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		c.yes(ctx)
	default:
		r.note(styleDim, c.no)
	}
}
