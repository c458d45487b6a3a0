package copilot_test

import (
	"testing"

	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/copilot"
	"github.com/pilotdesk/pilotdesk/session/sessiontest"
)

// TestConformance runs the backends' conformance suite on the Copilot CLI
// backend with the fake CLI (whose tools make no files).
func TestConformance(t *testing.T) {
	sessiontest.Run(t, sessiontest.Backend{
		New: func(t *testing.T) session.Agent {
			opts, _ := newFake(t)
			a, err := copilot.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			return a
		},
		Prompts: sessiontest.Prompts{
			Reply: "hello",
			Tool:  "tools",
			Hang:  "hang",
			Fail:  "error",
		},
		Wait: wait,
	})
}
