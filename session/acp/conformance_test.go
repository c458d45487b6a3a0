package acp_test

import (
	"testing"

	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/acp"
	"github.com/pilotdesk/pilotdesk/session/sessiontest"
)

// TestConformance runs the backends' conformance suite on the ACP backend
// with the fake agent.
func TestConformance(t *testing.T) {
	sessiontest.Run(t, sessiontest.Backend{
		New: func(t *testing.T) session.Agent {
			opts, _ := newFake(t)
			a, err := acp.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			return a
		},
		Prompts: sessiontest.Prompts{
			Reply:    "hello",
			Tool:     "tool made.txt",
			ToolFile: "made.txt",
			Hang:     "hang",
			Fail:     "error",
		},
		Wait: wait,
	})
}
