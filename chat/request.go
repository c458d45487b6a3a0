package chat

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// requestKind is how the REPL asks: the three input types. An
// ask_user request (no input type) is a choice when it offers choices and
// text when it does not.
type requestKind int

const (
	kindApproval requestKind = iota
	kindChoice
	kindText
)

// prompt is an open input request as the REPL shows it.
type prompt struct {
	req      *protocol.UserInputRequest
	kind     requestKind
	choices  []string // approval: [approve label, reject label]
	freeform bool     // typed text is an answer too (ask_user's allowFreeform)

	hint      string // shown after an input that was not valid
	highlight int    // the choice the pointer is on; -1: none (nothing is highlighted at first)
	input     editor // what is being typed (raw mode)
}

func newPrompt(req *protocol.UserInputRequest) *prompt {
	p := &prompt{req: req, highlight: -1, choices: req.Choices, freeform: req.AllowFreeform}
	switch req.InputType {
	case protocol.InputApproval:
		p.kind = kindApproval
		p.freeform = false
		// The relay refuses an approval without its two labels; should one
		// still arrive, the user can still answer it.
		switch len(p.choices) {
		case 0:
			p.choices = []string{"Approve", "Reject"}
		case 1:
			p.choices = []string{p.choices[0], "Reject"}
		}
	case protocol.InputChoice:
		p.kind = kindChoice
	case protocol.InputText:
		p.kind = kindText
	default: // ask_user
		if len(p.choices) > 0 {
			p.kind = kindChoice
		} else {
			p.kind = kindText
		}
	}
	if p.kind == kindChoice && len(p.choices) == 0 {
		// A choice with nothing to choose from is the agent's mistake (the
		// relay reports it); all the user can do is answer in words or reject.
		p.kind = kindText
	}
	return p
}

// outcome is what an input line means.
type outcome struct {
	valid    bool
	reject   bool
	answer   string
	index    *int   // the picked choice, 0-based
	freeform bool   // the user typed the answer
	shown    string // how the answer is echoed
}

// validInputs names what the user may type, for hints: the valid inputs,
// the valid range (docs/cli.md, Answering questions).
func (p *prompt) validInputs() string {
	switch p.kind {
	case kindApproval:
		return "a/1 or r/2"
	case kindChoice:
		rng := "1"
		if n := len(p.choices); n > 1 {
			rng = fmt.Sprintf("1-%d", n)
		}
		if p.freeform {
			return rng + ", r, or type your own answer"
		}
		return rng + " or r"
	}
	return "your answer, or r or /reject to reject"
}

// interpret reads one submitted line. An input that is not valid leaves an
// outcome with valid false and sets the hint; nothing is ever picked by
// default.
func (p *prompt) interpret(line string) outcome {
	in := strings.TrimSpace(line)
	switch p.kind {
	case kindApproval:
		switch strings.ToLower(in) {
		case "a", "1":
			return outcome{valid: true, answer: protocol.AnswerApprove, shown: p.choices[0]}
		case "r", "2":
			return outcome{valid: true, reject: true, shown: p.choices[1]}
		}
		p.hint = "Please answer " + p.validInputs() + "."
	case kindChoice:
		switch {
		case in == "":
			p.hint = "Please choose: " + p.validInputs() + "."
		case client.IsRejection(in):
			return outcome{valid: true, reject: true, shown: "Reject"}
		case isNumber(in):
			n, err := strconv.Atoi(in)
			if err == nil && n >= 1 && n <= len(p.choices) {
				return p.pick(n - 1)
			}
			p.hint = fmt.Sprintf("%s is not on the list. Please choose %s.", in, p.validInputs())
		case p.freeform:
			return outcome{valid: true, answer: in, freeform: true, shown: in}
		default:
			p.hint = "Please choose " + p.validInputs() + "."
		}
	case kindText:
		switch {
		case in == "":
			p.hint = "An answer is required: type it, or r or /reject to reject."
		case client.IsRejection(in):
			return outcome{valid: true, reject: true, shown: in}
		default:
			return outcome{valid: true, answer: in, freeform: true, shown: in}
		}
	}
	return outcome{}
}

// pick chooses choice i.
func (p *prompt) pick(i int) outcome {
	return outcome{valid: true, answer: p.choices[i], index: &i, shown: p.choices[i]}
}

// enter submits the typed line, or the highlighted choice when nothing is
// typed (raw mode).
func (p *prompt) enter() outcome {
	line := p.input.submit(false)
	if strings.TrimSpace(line) == "" && p.kind == kindChoice && p.highlight >= 0 {
		return p.pick(p.highlight)
	}
	return p.interpret(line)
}

// move moves the choice pointer: from nothing, Down goes to the first
// choice and Up to the last; then they step and wrap around. Moving clears
// what was typed, so Enter means the pointer.
func (p *prompt) move(down bool) {
	if p.kind != kindChoice {
		return
	}
	n := len(p.choices)
	switch {
	case p.highlight < 0 && down:
		p.highlight = 0
	case p.highlight < 0:
		p.highlight = n - 1
	case down:
		p.highlight = (p.highlight + 1) % n
	default:
		p.highlight = (p.highlight - 1 + n) % n
	}
	p.input.clear()
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
