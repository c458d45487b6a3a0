package chat

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// questions are the agent's input requests as this terminal follows
// them: the one open, those queued behind it, the one answered here until
// the relay closes it, and those of a replay until it says how they
// ended. Like all of repl's state they belong to the loop goroutine.
type questions struct {
	open     *prompt                      // the open one
	queued   []*protocol.UserInputRequest // more, in order (the relay sends one at a time)
	answered *prompt                      // the last one answered here, until the relay closes it
	// replayed holds the questions of a replay until the replay says how
	// they ended: an answered one is then printed as it was, the one still
	// open becomes the prompt (copilot:subscribed's pendingInput).
	replayed map[string]*protocol.UserInputRequest
}

// answeredHere reports whether id is the question last answered here.
func (q *questions) answeredHere(id string) bool {
	return q.answered != nil && q.answered.req.RequestID == id
}

// openPrompt shows an input request and makes it the open one
// (docs/cli.md, Answering questions): the spinner stops (statusLine shows
// nothing while a question is open) and the live text is finished first.
func (r *repl) openPrompt(req *protocol.UserInputRequest) {
	r.waiting = false
	r.scr.endLine()
	p := newPrompt(req)
	r.ask.open = p
	r.questionLines(p)
	if !r.cfg.Term.Raw && p.kind == kindChoice {
		// Without raw keys the list cannot change: print it once.
		for _, l := range r.choiceLines(p, -1) {
			r.scr.line(l)
		}
	}
	if q := conversation.QueuedText(p.req.Queued); q != "" {
		r.note(styleDim, "  "+q)
	}
	if !r.liveCountdown() {
		// Printed once: the line cannot change. The relay's deadline is
		// the only one; the terminal applies none of its own.
		if d := r.deadline(p); !d.IsZero() {
			r.note(styleDim, "  "+conversation.CountdownText(d, r.cfg.Now()))
		}
	}
}

// deadline is when the relay times the question out, on this clock (the
// fold's Pending.Deadline: the relay's expiresAt corrected by the skew
// measured from serverTime); zero when it waits forever.
func (r *repl) deadline(p *prompt) time.Time {
	if r.fold == nil || r.fold.Pending == nil || r.fold.Pending.Request.RequestID != p.req.RequestID {
		return time.Time{}
	}
	return r.fold.Pending.Deadline
}

// liveCountdown reports whether the open question's countdown is redrawn
// in place (a terminal in raw mode), rather than printed once.
func (r *repl) liveCountdown() bool { return r.cfg.Term.Live && r.cfg.Term.Raw }

// countdownShows reports whether a countdown is on screen and needs the
// clock's ticks.
func (r *repl) countdownShows() bool {
	return r.ask.open != nil && r.liveCountdown() && !r.deadline(r.ask.open).IsZero()
}

// questionLines prints the part of a question that never changes: the
// question, then the approval's two labels or the text hint.
func (r *repl) questionLines(p *prompt) {
	q := strings.TrimSpace(p.req.Question)
	if q == "" {
		q = "The agent asks:"
	}
	for _, l := range strings.Split(q, "\n") {
		r.scr.line(r.scr.style(styleBold, sanitize(strings.TrimRight(l, "\r"))))
	}
	switch p.kind {
	case kindApproval:
		// The approve label in the info colour, the reject label
		// in the error colour.
		r.scr.line("  a/1) " + r.scr.style(styleInfo, oneLine(conversation.Visible(p.choices[0]))))
		r.scr.line("  r/2) " + r.scr.style(styleError, oneLine(conversation.Visible(p.choices[1]))))
	case kindText:
		r.note(styleDim, "  Type your answer, or r or /reject to reject.")
	}
}

// choiceLines is the numbered list (numbers in the info colour), the
// pointer on the highlighted item, and Reject below.
func (r *repl) choiceLines(p *prompt, highlight int) []string {
	lines := make([]string, 0, len(p.choices)+2)
	for i, c := range p.choices {
		pointer := "  "
		text := oneLine(conversation.Visible(c))
		if i == highlight {
			pointer = r.scr.style(styleInfo, "❯ ")
			text = r.scr.style(styleBold, text)
		}
		lines = append(lines, pointer+r.scr.style(styleInfo, fmt.Sprintf("%d)", i+1))+" "+text)
	}
	lines = append(lines, "  r) "+r.scr.style(styleError, "Reject"))
	if p.freeform {
		lines = append(lines, r.scr.style(styleDim, "  or type your own answer"))
	}
	return lines
}

// glyph is the answer line's prompt: a `?` in the info colour for text, a
// pointer for the others (docs/cli.md, Answering questions).
func (r *repl) glyph(p *prompt) string {
	if p.kind == kindText {
		return r.scr.style(styleInfo, "?") + " "
	}
	return r.scr.style(styleDim, "›") + " "
}

// promptFooter is the open question's changing part in raw mode: the list
// (its pointer moves), the hint after a bad input, the answer line.
func (r *repl) promptFooter(p *prompt) []string {
	var lines []string
	if p.kind == kindChoice {
		lines = r.choiceLines(p, p.highlight)
	}
	if p.hint != "" {
		lines = append(lines, r.scr.style(styleWarn, p.hint))
	}
	if d := r.deadline(p); !d.IsZero() {
		lines = append(lines, r.scr.style(styleDim, conversation.CountdownText(d, r.cfg.Now())))
	}
	return append(lines, r.glyph(p)+sanitize(p.input.String()))
}

// resolve sends a valid outcome: an answer or a rejection. An outcome that
// is not valid changes nothing but the hint, and the question stays.
func (r *repl) resolve(ctx context.Context, p *prompt, o outcome) {
	if !o.valid || r.ask.open != p {
		return
	}
	r.ask.open = nil
	if r.cfg.Term.Raw {
		// Leave the exchange in the transcript: the list with the pick,
		// and the answer.
		r.scr.showFooter(nil)
		if p.kind == kindChoice {
			picked := -1
			if o.index != nil {
				picked = *o.index
			}
			for _, l := range r.choiceLines(p, picked) {
				r.scr.line(l)
			}
		}
		style := styleInfo
		if o.reject {
			style = styleError
		}
		r.scr.line(r.glyph(p) + r.scr.style(style, oneLine(o.shown)))
	}
	p.hint = ""
	err := r.send(ctx, func(c context.Context) error {
		if o.reject {
			return r.conn.Reject(c, r.conv, p.req.RequestID)
		}
		return r.conn.Answer(c, r.conv, p.req.RequestID, o.answer, o.freeform, o.index)
	})
	if err != nil {
		r.note(styleError, "The answer was not sent: "+err.Error())
		r.ask.open = p
		return
	}
	r.ask.answered = p
	// The agent goes on (or, after a rejection, the relay ends the turn).
	r.waiting = !o.reject
	r.openNext()
}

// closePrompt closes the open question without an answer from here (it
// was answered in another window, timed out, the turn was aborted) and
// says why.
func (r *repl) closePrompt(why string) {
	if r.ask.open == nil {
		return
	}
	r.ask.open = nil
	r.scr.showFooter(nil)
	if why != "" {
		r.note(styleInfo, why)
	}
	r.openNext()
}

// openNext opens the next queued question, if any.
func (r *repl) openNext() {
	if next := r.ask.next(); next != nil {
		r.openPrompt(next)
	}
}

// next takes the next queued question off the queue once none is open
// (nil: none to open).
func (q *questions) next() *protocol.UserInputRequest {
	if q.open != nil || len(q.queued) == 0 {
		return nil
	}
	next := q.queued[0]
	q.queued = q.queued[1:]
	return next
}

// dropQueued removes a queued question that was closed before its turn.
func (q *questions) dropQueued(id string) bool {
	for i, req := range q.queued {
		if req.RequestID == id {
			q.queued = append(q.queued[:i], q.queued[i+1:]...)
			return true
		}
	}
	return false
}
