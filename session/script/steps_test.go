package script

import (
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/session"
)

// TestCarriesOutTheNumberedSteps: the prompt a plan card's Run in Act
// sends plays exactly the tool steps it lists, in its order, and nothing
// else: not the turn whose match ("plan") is among its words, nor a tool
// of that turn the prompt left out.
func TestCarriesOutTheNumberedSteps(t *testing.T) {
	const src = `{"turns": [
		{"match": "plan", "steps": [{"delta": "the plan scenario"},
			{"tool": {"name": "bash", "arguments": {"command": "go test ./..."}, "result": "ok"}},
			{"tool": {"name": "edit", "arguments": {"path": "main.go"}, "result": "edited"}},
			{"tool": {"name": "edit", "arguments": {"path": "README.md"}, "result": "edited the readme"}}]}
	]}`
	host := newFakeHost("act")
	sess, _ := open(t, src, host)
	prompt := "Carry out exactly these steps of your plan, in this order, and nothing else:\n" +
		"1. edit README.md (the change you proposed)\n2. run `go test ./...`\n3. deploy it\n"
	if err := run(t, sess, prompt); err != nil {
		t.Fatal(err)
	}
	events, _, _ := host.recorded()
	var ran []string
	for _, ev := range events {
		if ts, ok := ev.(session.ToolStart); ok {
			ran = append(ran, ts.ToolName+" "+string(ts.Arguments))
		}
	}
	want := []string{`edit {"path":"README.md"}`, `bash {"command":"go test ./..."}`}
	if strings.Join(ran, "|") != strings.Join(want, "|") {
		t.Fatalf("ran %q, want %q", ran, want)
	}
	said := strings.Join(deltasOf(events), "")
	if strings.Contains(said, "the plan scenario") {
		t.Fatalf("played the plan scenario: %q", said)
	}
	for _, w := range []string{"Step 1: edit README.md", "Step 2: run `go test ./...`", "Step 3, deploy it: this script has no tool for it", "2 of 3 steps are done"} {
		if !strings.Contains(said, w) {
			t.Fatalf("the reply %q does not say %q", said, w)
		}
	}
}

// TestStepsTurnWins: a turn written for such prompts, its match a phrase
// of their first line, plays instead.
func TestStepsTurnWins(t *testing.T) {
	const src = `{"turns": [
		{"match": "plan", "steps": [{"delta": "the plan scenario"}]},
		{"match": "carry out exactly", "steps": [{"delta": "written for it"}]}
	]}`
	host := newFakeHost("act")
	sess, _ := open(t, src, host)
	if err := run(t, sess, "Carry out exactly these steps of your plan, in this order, and nothing else:\n1. run `make`\n"); err != nil {
		t.Fatal(err)
	}
	events, _, _ := host.recorded()
	if got := strings.Join(deltasOf(events), ""); got != "written for it" {
		t.Fatalf("said %q", got)
	}
}

func TestNumberedSteps(t *testing.T) {
	for _, tc := range []struct {
		prompt string
		steps  int
	}{
		{"Carry out exactly these steps of your plan:\n1. a\n2. b\n", 2},
		{"Do these steps:\n\n1) a\n", 1},
		{"make a plan", 0},
		{"Here are the steps:\n1. a\nand then something else", 0},
		{"Steps:", 0},
		{"What is 1. here?\n1. a", 0},
	} {
		steps, ok := numberedSteps(tc.prompt)
		if len(steps) != tc.steps || ok != (tc.steps > 0) {
			t.Errorf("numberedSteps(%q) = %q, %v", tc.prompt, steps, ok)
		}
	}
}
