package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// rawDB opens a database file directly, as another program would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	return db
}

func execAll(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func pragmaInt(t *testing.T, path, pragma string) int {
	t.Helper()
	db := rawDB(t, path)
	defer db.Close()
	var v int
	if err := db.QueryRow("PRAGMA " + pragma).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// frozenV1 is schema version 1 as it shipped, written out here rather than
// taken from schema.go: if someone edits migration 1 instead of adding a
// migration, the files already on users' disks no longer match and this
// test says so.
var frozenV1 = []string{
	`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID`,
	`CREATE TABLE conversations (id TEXT PRIMARY KEY, title TEXT NOT NULL DEFAULT '', mode TEXT NOT NULL DEFAULT '',
		created_at INTEGER, updated_at INTEGER, last_seq INTEGER NOT NULL DEFAULT 0, streaming INTEGER NOT NULL DEFAULT 0,
		pending_input BLOB, model TEXT NOT NULL DEFAULT '') WITHOUT ROWID`,
	`CREATE INDEX conversations_by_updated_at ON conversations (updated_at)`,
	`CREATE TABLE events (conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
		seq INTEGER NOT NULL, type TEXT NOT NULL, frame BLOB NOT NULL, PRIMARY KEY (conversation_id, seq)) WITHOUT ROWID`,
	`PRAGMA application_id = 1885957220`,
	`PRAGMA user_version = 1`,
}

func TestOpensHandMadeV1(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	db := rawDB(t, path)
	execAll(t, db, frozenV1...)
	execAll(t, db,
		`INSERT INTO meta VALUES ('epoch', 'feedfacecafebeef')`,
		fmt.Sprintf(`INSERT INTO conversations VALUES ('c1', 'Old title', 'act', %d, %d, 2, 1, x'7b7d', 'm1')`, t0.UnixNano(), t0.UnixNano()+5),
		`INSERT INTO events VALUES ('c1', 1, 'copilot:user_message', '{"a":1}'), ('c1', 2, 'copilot:delta', '{"b":2}')`)
	db.Close()

	s := openStore(t, dir, Options{})
	defer mustClose(t, s)
	if s.Epoch() != "feedfacecafebeef" {
		t.Fatalf("epoch %q", s.Epoch())
	}
	c, err := s.Conversation(context.Background(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Title != "Old title" || c.Mode != "act" || !c.CreatedAt.Equal(t0) || !c.UpdatedAt.Equal(t0.Add(5)) || c.LastSeq != 2 || !c.Streaming || string(c.PendingInput) != "{}" || c.Model != "m1" {
		t.Fatalf("conversation %+v", c)
	}
	evs := allEvents(t, s, "c1")
	if len(evs) != 2 || evs[0].Type != "copilot:user_message" || string(evs[1].Frame) != `{"b":2}` {
		t.Fatalf("events %+v", evs)
	}
	mustWrite(t, s, history.Batch{Events: testEvents("c1", 3, 3)})
}

func TestMigratesEmptyV0(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	db := rawDB(t, path)
	// A SQLite file with no schema and user_version 0: version 0.
	execAll(t, db, `CREATE TABLE scratch (x)`, `DROP TABLE scratch`)
	db.Close()

	s := openStore(t, dir, Options{})
	if s.Epoch() == "" {
		t.Fatal("no epoch after migrating from version 0")
	}
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "a"}}, Events: testEvents("a", 1, 2)})
	mustClose(t, s)
	if v := pragmaInt(t, path, "user_version"); v != len(migrations) {
		t.Fatalf("user_version %d after migration, want %d", v, len(migrations))
	}
	if v := pragmaInt(t, path, "application_id"); v != applicationID {
		t.Fatalf("application_id %#x", v)
	}
}

// next is a hypothetical next migration, to test the machinery.
var next = migration{"add pinned", func(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `ALTER TABLE conversations ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0`)
	return err
}}

// withNext is the schema's migrations and then next.
func withNext(more ...migration) []migration {
	return append(append(append([]migration(nil), migrations...), next), more...)
}

func TestMigratesToNext(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s := openStore(t, dir, Options{})
	epoch := s.Epoch()
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "a", Title: "kept", LastSeq: 40}}, Events: testEvents("a", 1, 40)})
	mustClose(t, s)

	s = openStore(t, dir, Options{migrations: withNext()})
	if s.Epoch() != epoch {
		t.Fatal("migration changed the epoch")
	}
	sameEvents(t, allEvents(t, s, "a"), testEvents("a", 1, 40))
	if c, err := s.Conversation(context.Background(), "a"); err != nil || c.Title != "kept" {
		t.Fatalf("after migration: %+v, %v", c, err)
	}
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "b"}}}) // the upsert still fits the table
	mustClose(t, s)
	if v := pragmaInt(t, path, "user_version"); v != len(migrations)+1 {
		t.Fatalf("user_version %d, want %d", v, len(migrations)+1)
	}
	// The new column is there.
	db := rawDB(t, path)
	var pinned int
	if err := db.QueryRow(`SELECT pinned FROM conversations WHERE id = 'a'`).Scan(&pinned); err != nil {
		t.Fatalf("no pinned column: %v", err)
	}
	db.Close()

	// The code that knows only the versions before refuses the file, and
	// says why.
	_, err := Open(context.Background(), dir, quiet())
	if !errors.Is(err, ErrTooNew) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprintf("version is %d", len(migrations)+1)) {
		t.Fatalf("old code on a newer file: %v", err)
	}
}

func TestFailedMigrationChangesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s := openStore(t, dir, Options{})
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "a"}}, Events: testEvents("a", 1, 5)})
	mustClose(t, s)

	broken := migration{"half done", func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE half (x)`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM events`); err != nil {
			return err
		}
		return errors.New("step two failed")
	}}
	_, err := Open(context.Background(), dir, Options{Logger: discardLogger(), migrations: withNext(broken)})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("migration %d (half done)", len(migrations)+2)) || !strings.Contains(err.Error(), "step two failed") {
		t.Fatalf("Open with a failing migration: %v", err)
	}
	if v := pragmaInt(t, path, "user_version"); v != len(migrations) {
		t.Fatalf("user_version %d after a failed migration, want %d", v, len(migrations))
	}
	s = openStore(t, dir, Options{})
	defer mustClose(t, s)
	sameEvents(t, allEvents(t, s, "a"), testEvents("a", 1, 5))
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name IN ('half')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the failed migration left table half: %d, %v", n, err)
	}
	var cols int
	if err := s.r.QueryRow(`SELECT count(*) FROM pragma_table_info('conversations') WHERE name = 'pinned'`).Scan(&cols); err != nil || cols != 0 {
		t.Fatalf("the failed migration left next's column: %d, %v", cols, err)
	}
}

func TestNewerUserVersionRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	mustClose(t, openStore(t, dir, Options{}))
	db := rawDB(t, path)
	execAll(t, db, `PRAGMA user_version = 99`)
	db.Close()
	before := fileDigest(t, path)
	_, err := Open(context.Background(), dir, quiet())
	if !errors.Is(err, ErrTooNew) {
		t.Fatalf("Open of a version 99 file: %v", err)
	}
	for _, want := range []string{path, "99", "newer pilotdesk", "move"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the message lacks %q: %v", want, err)
		}
	}
	if fileDigest(t, path) != before {
		t.Fatal("Open changed a file it refused")
	}
}

func TestOtherProgramsDatabaseRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	db := rawDB(t, path)
	execAll(t, db, `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`, `INSERT INTO notes (body) VALUES ('mine')`)
	db.Close()
	before := fileDigest(t, path)
	_, err := Open(context.Background(), dir, quiet())
	if !errors.Is(err, ErrNotHistory) || !strings.Contains(err.Error(), "another program") {
		t.Fatalf("Open of another program's database: %v", err)
	}
	if fileDigest(t, path) != before {
		t.Fatal("Open changed another program's database")
	}
}
