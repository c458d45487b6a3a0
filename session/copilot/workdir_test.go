package copilot_test

import (
	"encoding/json"
	"testing"

	"github.com/pilotdesk/pilotdesk/session"
)

// One CLI serves conversations in different folders: each session.create
// carries its conversation's folder as workingDirectory (the agent's own
// folder when the relay names none), and no second CLI starts.
func TestSessionsInTheirOwnFolders(t *testing.T) {
	opts, fake := newFake(t)
	a := newAgent(t, opts)
	dirs := map[string]string{"conv-a": t.TempDir(), "conv-b": t.TempDir(), "conv-c": ""}
	for _, conv := range []string{"conv-a", "conv-b", "conv-c"} {
		s := open(t, a, conv, session.OpenOptions{WorkDir: dirs[conv]}, newHost("act"))
		if err := run(t, s, "hello"); err != nil {
			t.Fatal(err)
		}
	}
	dirs["conv-c"] = opts.WorkDir
	creates := fake.find("session.create")
	if len(creates) != 3 || len(fake.pids()) != 1 {
		t.Fatalf("session.create %d times over %d CLIs; want 3 over one", len(creates), len(fake.pids()))
	}
	got := map[string]bool{}
	for _, c := range creates {
		var p struct {
			WorkingDirectory string `json:"workingDirectory"`
		}
		if err := json.Unmarshal(c.Params, &p); err != nil {
			t.Fatal(err)
		}
		got[p.WorkingDirectory] = true
	}
	for conv, dir := range dirs {
		if !got[dir] {
			t.Errorf("%s: no session.create in %q (got %v)", conv, dir, got)
		}
	}
}
