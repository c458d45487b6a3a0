package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// isCorrupt reports whether err is SQLite finding a damaged page.
func isCorrupt(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB
}

// rebuiltEvents is the name the events table is rebuilt under before it
// takes the old one's place.
const rebuiltEvents = "events_rebuilt"

// deleteDamaged deletes a conversation whose events cannot be read (their
// pages were zeroed or overwritten while the relay ran): a plain DELETE
// must walk those pages to unlink the rows and fails. Removing rows needs
// no readable pages when the table is rebuilt without them, so, in one
// transaction, the events of every other conversation are copied into a
// new table (each read by its own key range, walking away from the damaged
// rows, so that pages holding only those are never entered), the schema is pointed at
// the new table (SQLite's documented writable_schema procedure, with the
// schema version bumped so that every connection reloads it), and the
// conversation's row is deleted. The old table's pages are then
// unreferenced; VACUUM rewrites the file without them, so nothing of the
// conversation stays and the next Open's quick_check finds the database
// whole.
//
// When another conversation's events cannot be read either, the delete
// cannot be done without losing them: nothing changes and the error says
// which.
func (s *Store) deleteDamaged(ctx context.Context, id string) error {
	conn, err := s.w.Conn(ctx) // the writer's only connection: no write runs meanwhile
	if err != nil {
		return err
	}
	defer conn.Close()
	var ddl string
	if err := conn.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'events'`).Scan(&ddl); err != nil {
		return fmt.Errorf("read the events table's schema: %w", err)
	}
	var others int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE tbl_name = 'events' AND name <> 'events'`).Scan(&others); err != nil {
		return fmt.Errorf("read the events table's schema: %w", err)
	}
	if others > 0 || !strings.HasPrefix(ddl, "CREATE TABLE events ") {
		// An index or trigger on events would be left pointing at the
		// old table: the rebuild is only for the schema it knows.
		return fmt.Errorf("the events table's schema is not the one this rebuild knows: %q", ddl)
	}
	// The conversation's row goes without the cascade into the old events
	// table, which would read its pages; the new table holds none of its
	// events. foreign_keys cannot change inside a transaction.
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		return err
	}
	defer func() {
		// The connection is the store's writer from now on again: with
		// foreign keys, and with its schema read-only.
		_, ferr := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`)
		_, werr := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA writable_schema = OFF`)
		if ferr != nil || werr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // discarded: a new one gets the settings of dsn
			s.log.Warn("history: could not reset the writer's settings after the rebuild; its connection is discarded", "file", s.path, "err", errors.Join(ferr, werr))
		}
	}()
	if err := s.rebuildEventsWithout(ctx, conn, id, strings.Replace(ddl, "events", rebuiltEvents, 1)); err != nil {
		return err
	}
	// The old table's pages are referenced by nothing now; VACUUM rewrites
	// the file without them. If it fails the history is whole and correct
	// but the next quick_check reports the pages as never used, so say so.
	if _, err := conn.ExecContext(ctx, `VACUUM`); err != nil {
		s.log.Error("history: the damaged conversation is deleted, but the database could not be rewritten without its pages: they still hold its text, and the next start reports the database as damaged until it is rewritten (sqlite3 "+s.path+" VACUUM, with the relay stopped)",
			"file", s.path, "conversationId", id, "err", err)
		return nil
	}
	return nil
}

// rebuildEventsWithout is deleteDamaged's transaction.
func (s *Store) rebuildEventsWithout(ctx context.Context, conn *sql.Conn, id, ddl string) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("create %s: %w", rebuiltEvents, err)
	}
	type other struct {
		id      string
		lastSeq int64
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, last_seq FROM conversations WHERE id <> ?`, id)
	if err != nil {
		return fmt.Errorf("list the other conversations: %w", err)
	}
	var others []other
	for rows.Next() {
		var o other
		if err := rows.Scan(&o.id, &o.lastSeq); err != nil {
			rows.Close()
			return fmt.Errorf("list the other conversations: %w", err)
		}
		others = append(others, o)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return fmt.Errorf("list the other conversations: %w", err)
	}
	// A conversation's events are seqs 1 to last_seq (written in the same
	// transaction as last_seq), so each is read walking away from the
	// damaged conversation's rows: one sorting before it from its first
	// row forward, one after it from its last row back, and the LIMIT ends
	// the walk on its own last row (without it SQLite steps one row
	// further to see that the range ended: into the damaged pages when
	// they come next).
	forward := `INSERT INTO ` + rebuiltEvents + ` SELECT * FROM events WHERE conversation_id = ? AND seq <= ? ORDER BY seq LIMIT ?`
	backward := `INSERT INTO ` + rebuiltEvents + ` SELECT * FROM events WHERE conversation_id = ? AND seq <= ? ORDER BY seq DESC LIMIT ?`
	for _, o := range others {
		q := forward
		if o.id > id { // the events table's order: TEXT, BINARY collation
			q = backward
		}
		if _, err := tx.ExecContext(ctx, q, o.id, o.lastSeq, o.lastSeq); err != nil {
			return fmt.Errorf("the events of conversation %q cannot be read either, so they would be lost: %w", o.id, err)
		}
	}
	var version int64
	if err := tx.QueryRowContext(ctx, `PRAGMA schema_version`).Scan(&version); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM conversations WHERE id = ?`, id); err != nil {
		return fmt.Errorf("delete the conversation: %w", err)
	}
	for _, q := range []string{
		`PRAGMA writable_schema = ON`,
		`UPDATE sqlite_schema SET rootpage = (SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = '` + rebuiltEvents + `') WHERE type = 'table' AND name = 'events'`,
		`DELETE FROM sqlite_schema WHERE type = 'table' AND name = '` + rebuiltEvents + `'`,
		fmt.Sprintf(`PRAGMA schema_version = %d`, version+1),
		`PRAGMA writable_schema = OFF`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("point the schema at the rebuilt events table: %w", err)
		}
	}
	return tx.Commit()
}
