package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// applicationID marks a SQLite file as a pilotdesk history ("pild"), so
// Open can tell our database from another program's.
const applicationID = 0x70696c64

// A migration moves the schema up one version inside the caller's
// transaction. PRAGMA user_version holds the version: 0 is an empty
// database, N means migrations[:N] have run.
type migration struct {
	name string
	up   func(ctx context.Context, tx *sql.Tx) error
}

// migrations are applied in order; never edit one that has shipped, append
// a new one (and a test that opens a file of the version before it).
var migrations = []migration{
	{"initial schema", migrateV1},
	{"device tokens", migrateV2}, // devices.go
	{"spend ledger", migrateV3},  // spend.go
	{"conversation agent", migrateV4},
	{"conversation workspace", migrateV5},
	{"push subscriptions", migrateV6}, // push.go
}

// schemaV1 is the first schema.
//
// Times are Unix nanoseconds, NULL for the zero time. events is WITHOUT
// ROWID so that its primary key is the table itself: rows sit in
// (conversation, seq) order, a replay is one range scan and an insert
// touches one B-tree instead of a table and an index.
const schemaV1 = `
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE conversations (
	id            TEXT PRIMARY KEY,
	title         TEXT NOT NULL DEFAULT '',
	mode          TEXT NOT NULL DEFAULT '',
	created_at    INTEGER,
	updated_at    INTEGER,
	last_seq      INTEGER NOT NULL DEFAULT 0,
	streaming     INTEGER NOT NULL DEFAULT 0,
	pending_input BLOB,
	model         TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;

CREATE INDEX conversations_by_updated_at ON conversations (updated_at);

CREATE TABLE events (
	conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	seq             INTEGER NOT NULL,
	type            TEXT NOT NULL,
	frame           BLOB NOT NULL,
	PRIMARY KEY (conversation_id, seq)
) WITHOUT ROWID;
`

func migrateV1(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, schemaV1); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", applicationID)); err != nil {
		return err
	}
	// The epoch is made once, with the database, and never changes.
	_, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('epoch', ?)`, history.NewEpoch())
	return err
}

// migrateV4 records, per conversation, the agent that ran its latest turn
// (history.Conversation.Agent). Conversations stored before it get an
// empty one, unknown: the relay's agent now may not be the one that ran
// them.
func migrateV4(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `ALTER TABLE conversations ADD COLUMN agent TEXT NOT NULL DEFAULT ''`)
	return err
}

// migrateV5 records, per conversation, its workspace
// (history.Conversation.Workspace) as JSON; conversations stored before it
// get an empty one, unfixed: their next send fixes it.
func migrateV5(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `ALTER TABLE conversations ADD COLUMN workspace TEXT NOT NULL DEFAULT ''`)
	return err
}

// migrate brings the database from version from up to len(steps), all in
// one transaction: a failed step leaves the file exactly as it was.
func migrate(ctx context.Context, db *sql.DB, steps []migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Read the version again inside the write transaction: it is the one
	// the steps apply to.
	var from int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&from); err != nil {
		return err
	}
	if from >= len(steps) {
		return nil
	}
	for v := from; v < len(steps); v++ {
		if err := steps[v].up(ctx, tx); err != nil {
			return fmt.Errorf("migration %d (%s): %w", v+1, steps[v].name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(steps))); err != nil {
		return err
	}
	return tx.Commit()
}
