package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// frozenV2 is what migration 2 added, as it shipped (see frozenV1).
var frozenV2 = []string{
	`CREATE TABLE devices (name TEXT PRIMARY KEY, role TEXT NOT NULL, hash BLOB NOT NULL UNIQUE,
		created_at INTEGER NOT NULL, expires_at INTEGER, last_used INTEGER) WITHOUT ROWID`,
	`PRAGMA user_version = 2`,
}

func spentSum(t *testing.T, s *Store, since time.Time) int64 {
	t.Helper()
	entries, err := s.Spent(context.Background(), since)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, e := range entries {
		sum += e.NanoAIU
	}
	return sum
}

// A hand-made version 2 file gets the spend ledger on open, and what is
// spent survives closing and opening the data dir again.
func TestMigratesV2ToSpendAndKeepsIt(t *testing.T) {
	dir := t.TempDir()
	db := rawDB(t, filepath.Join(dir, FileName))
	execAll(t, db, frozenV1...)
	execAll(t, db, frozenV2...)
	execAll(t, db, `INSERT INTO meta VALUES ('epoch', 'feedfacecafebeef')`)
	db.Close()

	s := openStore(t, dir, Options{})
	if s.Epoch() != "feedfacecafebeef" {
		t.Fatalf("epoch %q", s.Epoch())
	}
	if got := spentSum(t, s, time.Time{}); got != 0 {
		t.Fatalf("a migrated store has spent %d", got)
	}
	now := time.Now()
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "a"}}, Events: testEvents("a", 1, 1),
		Spend: []history.Spend{{At: now.Add(-2 * time.Hour), NanoAIU: 3_000_000_000}, {At: now, NanoAIU: 1_200_000_000}}})
	mustClose(t, s)

	s = openStore(t, dir, Options{})
	defer mustClose(t, s)
	if got := spentSum(t, s, time.Time{}); got != 4_200_000_000 {
		t.Fatalf("after reopening: spent %d nano-AIU, want 4200000000", got)
	}
	if got := spentSum(t, s, now.Add(-time.Hour)); got != 1_200_000_000 {
		t.Fatalf("in the last hour: spent %d nano-AIU, want 1200000000", got)
	}
}
