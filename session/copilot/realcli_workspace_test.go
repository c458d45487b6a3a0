package copilot_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/checkpoint"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/relay/workspace"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/copilot"
	"github.com/pilotdesk/pilotdesk/session/copilot/mockopenai"
)

// TestRealCLIEditsItsWorkspace: the real CLI behind the relay, in a
// conversation whose first send names a folder other than the relay's
// default one: its shell tool, given a relative path, changes the file
// there; copilot:changes names it before copilot:idle, and copilot:restore
// puts it back (docs/workspaces.md, docs/checkpoints.md).
func TestRealCLIEditsItsWorkspace(t *testing.T) {
	opts := realCLI(t)
	const prompt = "Add a line to notes.txt."
	mock := mockopenai.Start(func(r *mockopenai.Request) mockopenai.Reply {
		if r.Last().Role == "tool" {
			return mockopenai.Reply{Text: []string{"Done."}}
		}
		if strings.Contains(r.LastUser(), prompt) {
			args, _ := json.Marshal(map[string]string{"command": "printf 'one\\ntwo\\n' > notes.txt", "description": "add a line"})
			return mockopenai.Reply{Text: []string{"Adding it."}, ToolCalls: []mockopenai.ToolCall{{ID: "call_edit", Name: "bash", Arguments: string(args)}}}
		}
		return mockopenai.Reply{Text: []string{"OK."}}
	})
	t.Cleanup(mock.Close)
	opts.ProviderURL = mock.URL
	agent, err := copilot.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := agent.Close(); err != nil {
			t.Errorf("agent.Close: %v", err)
		}
	})

	// The agent's process starts before the relay's turn, whose events the
	// test awaits for relaytest.Timeout: a start takes longer on a loaded
	// machine.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	warm, err := agent.Open(ctx, "warm-up", session.OpenOptions{}, newHost("act"))
	if err != nil {
		t.Fatalf("starting the agent: %v", err)
	}
	if err := warm.Close(ctx); err != nil {
		t.Fatal(err)
	}

	root := t.TempDir()
	project := filepath.Join(root, "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	spaces, err := workspace.New(workspace.Options{Roots: []string{root}, Default: opts.WorkDir})
	if err != nil {
		t.Fatal(err)
	}
	cps, err := checkpoint.New(t.TempDir())
	if err != nil {
		t.Skip(err) // no git: checkpoints are off
	}
	srv := relaytest.Start(t, relay.Config{Agent: agent, Logger: testsupport.Logger(t), WorkDir: opts.WorkDir, Workspaces: spaces, Checkpoints: cps})
	relaytest.CheckWorkspaceEdit(t, srv, opts.WorkDir, relaytest.WorkspaceEdit{
		Dir: project, Prompt: prompt, File: "notes.txt",
		Before: "one\n", After: "one\ntwo\n", Additions: 1,
	})
}
