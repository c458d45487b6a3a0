package script_test

import (
	"testing"

	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/script"
	"github.com/pilotdesk/pilotdesk/session/sessiontest"
)

// conformanceScript plays the suite's turns: a reply in three deltas, a
// tool that writes a file in the workspace, a turn that waits, an error.
const conformanceScript = `{"turns": [
	{"match": "use the tool", "steps": [
		{"delta": "Writing it. "},
		{"tool": {"name": "edit", "arguments": {"path": "made.txt"}, "write": {"path": "made.txt", "content": "made\n"}}},
		{"delta": "The tool was {{tool}}."}
	]},
	{"match": "wait for me", "steps": [{"delta": "waiting"}, {"sleep": "10m"}, {"delta": "never"}]},
	{"match": "fail now", "steps": [{"delta": "about to fail"}, {"error": "boom"}]},
	{"steps": [{"delta": "Echo: "}, {"delta": "{{prompt}}"}, {"delta": "."}]}
]}`

// TestConformance runs the backends' conformance suite on the scripted
// agent.
func TestConformance(t *testing.T) {
	s, err := script.Parse("conformance.json", []byte(conformanceScript))
	if err != nil {
		t.Fatal(err)
	}
	sessiontest.Run(t, sessiontest.Backend{
		New: func(*testing.T) session.Agent { return script.New(s) },
		Prompts: sessiontest.Prompts{
			Reply:    "hello there",
			Tool:     "use the tool",
			ToolFile: "made.txt",
			Hang:     "wait for me",
			Fail:     "fail now",
		},
	})
}
