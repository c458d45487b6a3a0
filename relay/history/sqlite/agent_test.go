package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// A database of schema version 3 (before conversations recorded their
// agent) opens: its conversations and events are kept, their agent is
// unknown (empty, not the agent of the relay that opens it), and the agent
// written afterwards is stored and read back, here and after a reopen.
func TestMigratesV3ToAgent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	// Version 3 as it shipped: the frozen first schema, then the second
	// and third migrations, and a conversation written by that code.
	db := rawDB(t, path)
	execAll(t, db, frozenV1...)
	execAll(t, db, `INSERT INTO meta VALUES ('epoch', 'feedfacecafebeef')`)
	if err := migrate(context.Background(), db, migrations[:3]); err != nil {
		t.Fatal(err)
	}
	execAll(t, db,
		fmt.Sprintf(`INSERT INTO conversations VALUES ('c1', 'Old title', 'plan', %d, %d, 3, 0, NULL, 'm1')`, t0.UnixNano(), t0.UnixNano()),
		`INSERT INTO events VALUES ('c1', 1, 'copilot:user_message', '{"a":1}'), ('c1', 2, 'copilot:delta', '{"b":2}'), ('c1', 3, 'copilot:idle', '{"c":3}')`)
	db.Close()
	if v := pragmaInt(t, path, "user_version"); v != 3 {
		t.Fatalf("user_version %d, want 3", v)
	}

	s := openStore(t, dir, Options{})
	got, err := s.Conversation(context.Background(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "Old title" || got.Mode != "plan" || !got.CreatedAt.Equal(t0) || got.LastSeq != 3 || got.Model != "m1" || got.Agent != "" {
		t.Fatalf("after migrating: %+v", got)
	}
	if evs := allEvents(t, s, "c1"); len(evs) != 3 || evs[2].Type != "copilot:idle" || string(evs[1].Frame) != `{"b":2}` {
		t.Fatalf("events after migrating: %+v", evs)
	}

	got.Agent, got.LastSeq = "OpenCode (ACP)", 4
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{got}, Events: testEvents("c1", 4, 4)})
	mustClose(t, s)
	if v := pragmaInt(t, path, "user_version"); v != len(migrations) {
		t.Fatalf("user_version %d, want %d", v, len(migrations))
	}

	s = openStore(t, dir, Options{})
	defer mustClose(t, s)
	cs, err := s.Conversations(context.Background())
	if err != nil || len(cs) != 1 || cs[0].Agent != "OpenCode (ACP)" || cs[0].LastSeq != 4 {
		t.Fatalf("after a reopen: %+v, %v", cs, err)
	}
}
