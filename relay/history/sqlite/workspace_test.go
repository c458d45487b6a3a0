package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// A database of schema version 4 (before conversations recorded their
// workspace) opens: its conversations are kept with no workspace (their
// next send fixes one), and a workspace written afterwards is read back,
// here and after a reopen.
func TestMigratesV4ToWorkspace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	db := rawDB(t, path)
	execAll(t, db, frozenV1...)
	execAll(t, db, `INSERT INTO meta VALUES ('epoch', 'feedfacecafebeef')`)
	if err := migrate(context.Background(), db, migrations[:4]); err != nil {
		t.Fatal(err)
	}
	execAll(t, db,
		fmt.Sprintf(`INSERT INTO conversations VALUES ('c1', 'Old title', 'act', %d, %d, 1, 0, NULL, 'm1', 'Copilot CLI')`, t0.UnixNano(), t0.UnixNano()),
		`INSERT INTO events VALUES ('c1', 1, 'copilot:user_message', '{"a":1}')`)
	db.Close()

	s := openStore(t, dir, Options{})
	got, err := s.Conversation(context.Background(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "Old title" || got.Agent != "Copilot CLI" || !got.Workspace.IsZero() {
		t.Fatalf("after migrating: %+v", got)
	}
	got.Workspace = history.Workspace{Path: "/home/u/repo", Isolation: "worktree", Dir: "/d/wt/repo-c1", Branch: "pilotdesk/c1", Base: "abc", Worktree: "/d/wt/repo-c1"}
	got.LastSeq = 2
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{got}, Events: testEvents("c1", 2, 2)})
	mustClose(t, s)

	s = openStore(t, dir, Options{})
	defer mustClose(t, s)
	cs, err := s.Conversations(context.Background())
	if err != nil || len(cs) != 1 || cs[0].Workspace != got.Workspace {
		t.Fatalf("after a reopen: %+v, %v", cs, err)
	}
}
