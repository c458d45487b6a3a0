package acp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pilotdesk/pilotdesk/session"
)

// cwdOf is the cwd a logged session/new or session/load carried.
func cwdOf(t *testing.T, params json.RawMessage) string {
	t.Helper()
	var p struct {
		Cwd string `json:"cwd"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		t.Fatal(err)
	}
	return p.Cwd
}

// One agent process serves conversations in different folders: each ACP
// session is made with its conversation's folder as cwd (session/new, and
// session/load after a restart), and the agent's tool runs there, not in
// the agent's own folder. A session made in another folder is not loaded.
func TestSessionsInTheirOwnFolders(t *testing.T) {
	opts, f := newFake(t)
	a, b := t.TempDir(), t.TempDir()
	agent := newAgent(t, opts)
	for conv, dir := range map[string]string{"ca": a, "cb": b} {
		s := open(t, agent, conv, session.OpenOptions{WorkDir: dir}, newHost("act"))
		if err := run(t, s, "tool here.txt"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "here.txt")); err != nil {
			t.Errorf("%s: the tool did not run in its folder: %v", conv, err)
		}
	}
	if _, err := os.Stat(filepath.Join(f.workDir, "here.txt")); err == nil {
		t.Error("a tool ran in the agent's own folder")
	}
	news := f.find("session/new")
	if len(news) != 2 || len(f.pids()) != 1 {
		t.Fatalf("session/new %d times over %d processes; want 2 over one", len(news), len(f.pids()))
	}
	got := map[string]bool{cwdOf(t, news[0].Params): true, cwdOf(t, news[1].Params): true}
	if !got[a] || !got[b] {
		t.Errorf("session/new cwds %v, want %s and %s", got, a, b)
	}
	agent.Close()

	again := newAgent(t, opts)
	s := open(t, again, "ca", session.OpenOptions{WorkDir: a, Resume: true}, newHost("act"))
	if err := run(t, s, "echo back"); err != nil {
		t.Fatal(err)
	}
	loads := f.find("session/load")
	if len(loads) != 1 || cwdOf(t, loads[0].Params) != a {
		t.Fatalf("session/load %+v, want one in %s", loads, a)
	}
	// cb's session was made in b: opened in another folder it starts anew.
	open(t, again, "cb", session.OpenOptions{WorkDir: a, Resume: true}, newHost("act"))
	if loads := f.find("session/load"); len(loads) != 1 {
		t.Errorf("a session of another folder was loaded: %d loads", len(loads))
	}
	if news := f.find("session/new"); len(news) != 3 || cwdOf(t, news[2].Params) != a {
		t.Errorf("session/new after a change of folder: %d", len(news))
	}
}
