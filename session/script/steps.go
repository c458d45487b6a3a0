package script

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// A prompt that asks the agent to carry out numbered steps (what a plan
// card's Run in Act sends: "Carry out exactly these steps of your plan, in
// this order, and nothing else:" then "1. run `go test ./...`" on lines
// of their own) is not matched against the turns: the words of its steps
// ("plan", a file's name) would play a scenario that does something else.
// The scripted agent carries out those steps instead, each with the
// script's tool step it names, in their order, and nothing more; unless a
// turn was written for such prompts: its match a phrase of two words or
// more ("carry out exactly") in the prompt's first line.

// stepLine is a numbered step: "1. run `go test ./...`".
var stepLine = regexp.MustCompile(`^\s*\d+[.)]\s+(\S.*)$`)

// stepsTurn returns the turn written for a prompt of numbered steps whose
// first line is head, or nil.
func (s *Script) stepsTurn(head string) *Turn {
	lower := strings.ToLower(head)
	for i := range s.Turns {
		t := &s.Turns[i]
		if t.HasMatch && len(strings.Fields(t.Match)) >= 2 && t.matches(lower) {
			return t
		}
	}
	return nil
}

// numberedSteps returns the steps prompt asks to carry out: its first line
// asks for steps and ends with a colon, and every other line that is not
// blank is a numbered step. ok is false for any other prompt.
func numberedSteps(prompt string) (steps []string, ok bool) {
	lines := strings.Split(strings.TrimSpace(prompt), "\n")
	head := strings.ToLower(strings.TrimSpace(lines[0]))
	if len(lines) < 2 || !strings.Contains(head, "steps") || !strings.HasSuffix(head, ":") {
		return nil, false
	}
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		m := stepLine.FindStringSubmatch(l)
		if m == nil {
			return nil, false
		}
		steps = append(steps, strings.TrimSpace(m[1]))
	}
	return steps, len(steps) > 0
}

// toolFor returns the script's first tool step that step names: its
// command, its path or, for a tool without either, its name appears in the
// step's text.
func (s *Script) toolFor(step string) (ToolStep, bool) {
	lower := strings.ToLower(step)
	for _, t := range s.Turns {
		for _, st := range t.Steps {
			ts, ok := st.(ToolStep)
			if ok && toolNamed(ts, lower) {
				return ts, true
			}
		}
	}
	return ToolStep{}, false
}

// toolNamed reports whether the step's text (lower-cased) names ts.
func toolNamed(ts ToolStep, lowerStep string) bool {
	var args map[string]any
	_ = json.Unmarshal(ts.Arguments, &args) // a tool without arguments is named by its name
	for _, key := range []string{"command", "path", "file", "url"} {
		if v, ok := args[key].(string); ok && v != "" {
			return strings.Contains(lowerStep, strings.ToLower(v))
		}
	}
	return strings.Contains(lowerStep, strings.ToLower(ts.Name))
}

// carryOut plays the steps, each with its tool step, in order; a step the
// script has no tool for is said and skipped.
func (p *player) carryOut(ctx context.Context, s *Script, steps []string) error {
	done := 0
	for i, step := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		ts, ok := s.toolFor(step)
		if !ok {
			p.emitDelta(fmt.Sprintf("Step %d, %s: this script has no tool for it, so it is skipped.\n\n", i+1, step))
			continue
		}
		p.emitDelta(fmt.Sprintf("Step %d: %s. ", i+1, step))
		if err := p.runTool(ctx, ts); err != nil {
			return err
		}
		p.emitDelta(fmt.Sprintf("It was %s.\n\n", p.tool))
		done++
	}
	switch {
	case done == len(steps) && done == 1:
		p.emitDelta("The step is done, and nothing else.")
	case done == len(steps):
		p.emitDelta(fmt.Sprintf("All %d steps are done, and nothing else.", done))
	default:
		p.emitDelta(fmt.Sprintf("%d of %d steps are done, and nothing else.", done, len(steps)))
	}
	return nil
}
