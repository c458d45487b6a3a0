package acp_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pilotdesk/pilotdesk/session/acp/internal/fakeagent"
)

// TestLabel: before it starts the agent is named by its command, after by
// the name it gives in initialize; either way marked as an ACP agent.
func TestLabel(t *testing.T) {
	opts, _ := newFake(t, fakeagent.EnvName+"=opencode")
	a := newAgent(t, opts)
	exe, _ := os.Executable()
	if got, want := a.Label(), filepath.Base(exe)+" (ACP)"; got != want {
		t.Errorf("before the start: %q, want %q", got, want)
	}
	if err := a.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := a.Label(); got != "opencode (ACP)" {
		t.Errorf("after the start: %q, want opencode (ACP)", got)
	}
}
