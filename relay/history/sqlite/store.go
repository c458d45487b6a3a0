// Package sqlite is the durable history.Store: conversations and their
// events in one SQLite database (modernc.org/sqlite, pure Go) in the relay's
// data dir.
//
// The database runs in WAL mode. One connection does every write, each
// Write is one transaction, and with the default synchronous=FULL a commit
// returns only after the write-ahead log is on disk, so an event that a
// client saw survives SIGKILL and power loss. Reads use a small pool of
// their own connections and never hold a transaction across the caller's
// callback.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// Store is a history.Store in a SQLite database. Its methods are safe for
// concurrent use.
type Store struct {
	path       string
	epoch      string
	log        *slog.Logger
	w          *sql.DB // one connection, every write
	r          *sql.DB // readers
	lock       *os.File
	pageEvents int
	deviceDB   // the device tokens (devices.go), on w and r
	pageBytes  int

	// Prepared once; database/sql reuses them on the writer's single
	// connection and re-prepares them per reader connection.
	upsertConv, deleteEvents, deleteConv, deleteConvOlder *sql.Stmt
	selectEvents, selectConv, selectConvs, selectOlder    *sql.Stmt
	upsertSpend, selectSpend                              *sql.Stmt // spend.go
	// insertEvents[n-1] inserts n events with one statement.
	insertEvents [maxChunk]*sql.Stmt

	writeMu    sync.Mutex // one Write at a time; guards insertArgs
	insertArgs []any

	guardMu sync.Mutex // guards guard: MarkUnstored, ClearUnstored and Close
	guard   *os.File   // guardName, open for the store's life

	closeOnce sync.Once
	closeErr  error
}

var _ history.Store = (*Store)(nil)

const convColumns = `id, title, mode, created_at, updated_at, last_seq, streaming, pending_input, model, agent, workspace`

func (s *Store) prepare(ctx context.Context) error {
	stmts := []struct {
		db    *sql.DB
		dst   **sql.Stmt
		query string
	}{
		{s.w, &s.upsertConv, `INSERT INTO conversations (` + convColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET title = excluded.title, mode = excluded.mode,
				created_at = excluded.created_at, updated_at = excluded.updated_at,
				last_seq = excluded.last_seq, streaming = excluded.streaming,
				pending_input = excluded.pending_input, model = excluded.model, agent = excluded.agent,
				workspace = excluded.workspace`},
		{s.w, &s.deleteEvents, `DELETE FROM events WHERE conversation_id = ?`},
		{s.w, &s.deleteConv, `DELETE FROM conversations WHERE id = ?`},
		{s.w, &s.deleteConvOlder, `DELETE FROM conversations WHERE id = ? AND coalesce(updated_at, -9223372036854775808) < ?`},
		{s.r, &s.selectEvents, `SELECT seq, type, frame FROM events WHERE conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?`},
		{s.r, &s.selectConv, `SELECT ` + convColumns + ` FROM conversations WHERE id = ?`},
		{s.r, &s.selectConvs, `SELECT ` + convColumns + ` FROM conversations ORDER BY updated_at DESC, id`},
		{s.r, &s.selectOlder, `SELECT id FROM conversations WHERE coalesce(updated_at, -9223372036854775808) < ?`},
		{s.w, &s.upsertSpend, upsertSpendQuery},
		{s.r, &s.selectSpend, selectSpendQuery},
	}
	for n := 1; n <= maxChunk; n++ {
		stmts = append(stmts, struct {
			db    *sql.DB
			dst   **sql.Stmt
			query string
		}{s.w, &s.insertEvents[n-1], insertQuery(n)})
	}
	for _, st := range stmts {
		p, err := st.db.PrepareContext(ctx, st.query)
		if err != nil {
			return fmt.Errorf("history: %s: prepare %q: %w", s.path, st.query, err)
		}
		*st.dst = p
	}
	return nil
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

func (s *Store) Epoch() string { return s.epoch }

// Write commits the batch in one transaction: conversations first, then
// events (whose conversation must exist by then).
func (s *Store) Write(ctx context.Context, b history.Batch) error {
	if len(b.Events) == 0 && len(b.Conversations) == 0 && len(b.Spend) == 0 {
		return nil
	}
	convArgs := make([][]any, len(b.Conversations))
	for i, c := range b.Conversations {
		args, err := conversationArgs(c)
		if err != nil {
			return err
		}
		convArgs[i] = args
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: write: begin: %w", err)
	}
	defer tx.Rollback() // after Commit, a no-op
	if len(convArgs) > 0 {
		upsert := tx.StmtContext(ctx, s.upsertConv)
		for i, args := range convArgs {
			if _, err := upsert.ExecContext(ctx, args...); err != nil {
				return fmt.Errorf("history: write conversation %q: %w", b.Conversations[i].ID, err)
			}
		}
	}
	if err := s.insert(ctx, tx, b.Events); err != nil {
		return err
	}
	if err := s.writeSpend(ctx, tx, b.Spend); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		// A COMMIT that fails with SQLITE_FULL or an I/O error may leave
		// the transaction open, and database/sql forgets it all the same;
		// SQLite's advice is an explicit ROLLBACK (an error when the
		// transaction is already gone, which is fine). Otherwise every
		// later BEGIN on the one writer connection would fail, and the
		// store would never work again once space returns.
		_, _ = s.w.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return fmt.Errorf("history: write: commit: %w", err)
	}
	return nil
}

// maxChunk is the most events one INSERT statement carries. Inserting many
// rows per statement costs about a third less CPU per event than one row
// per statement (BenchmarkWrite); beyond ten or so rows it gains nothing.
const maxChunk = 32

func insertQuery(n int) string {
	return "INSERT INTO events (conversation_id, seq, type, frame) VALUES " +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", n), ", ")
}

// insert adds events in statements of up to maxChunk rows. The caller
// holds s.writeMu.
func (s *Store) insert(ctx context.Context, tx *sql.Tx, events []history.Event) error {
	for len(events) > 0 {
		chunk := events[:min(len(events), maxChunk)]
		events = events[len(chunk):]
		args := s.insertArgs[:0]
		for _, e := range chunk {
			args = append(args, e.ConversationID, e.Seq, e.Type, e.Frame)
		}
		s.insertArgs = args
		_, err := tx.StmtContext(ctx, s.insertEvents[len(chunk)-1]).ExecContext(ctx, args...)
		clear(args) // drop the references to the caller's frames
		if err == nil {
			continue
		}
		// A failed statement is undone alone; the transaction goes on. To
		// say which event was refused, insert the chunk again one by one.
		if len(chunk) > 1 && isConstraint(err) {
			one := tx.StmtContext(ctx, s.insertEvents[0])
			for _, e := range chunk {
				if _, err := one.ExecContext(ctx, e.ConversationID, e.Seq, e.Type, e.Frame); err != nil {
					return eventError(e, err)
				}
			}
		}
		return fmt.Errorf("history: write events %d to %d of conversation %q: %w", chunk[0].Seq, chunk[len(chunk)-1].Seq, chunk[0].ConversationID, err)
	}
	return nil
}

func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}

func eventError(e history.Event, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("history: write event %d of conversation %q: %w", e.Seq, e.ConversationID, history.ErrNotFound)
		case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("history: write event %d of conversation %q: the seq is already stored", e.Seq, e.ConversationID)
		}
	}
	return fmt.Errorf("history: write event %d of conversation %q: %w", e.Seq, e.ConversationID, err)
}

func conversationArgs(c history.Conversation) ([]any, error) {
	created, err := timeArg(c.CreatedAt)
	if err != nil {
		return nil, fmt.Errorf("history: write conversation %q: created: %w", c.ID, err)
	}
	updated, err := timeArg(c.UpdatedAt)
	if err != nil {
		return nil, fmt.Errorf("history: write conversation %q: updated: %w", c.ID, err)
	}
	var pending any // NULL when there is no open question
	if c.PendingInput != nil {
		pending = c.PendingInput
	}
	return []any{c.ID, c.Title, c.Mode, created, updated, c.LastSeq, c.Streaming, pending, c.Model, c.Agent, workspaceArg(c.Workspace)}, nil
}

// workspaceArg is a workspace as stored: JSON, "" for none.
func workspaceArg(w history.Workspace) string {
	if w.IsZero() {
		return ""
	}
	b, _ := json.Marshal(w) // strings only: it cannot fail
	return string(b)
}

// workspaceFrom reads a stored workspace; an unreadable one is none (the
// conversation's next send fixes it anew).
func workspaceFrom(s string) history.Workspace {
	var w history.Workspace
	if s != "" && json.Unmarshal([]byte(s), &w) != nil {
		return history.Workspace{}
	}
	return w
}

// The instants a Unix nanosecond count in an int64 can hold.
var (
	minTime = time.Unix(0, math.MinInt64+1) // MinInt64 itself stands for "older than anything" in queries
	maxTime = time.Unix(0, math.MaxInt64)
)

// timeArg is a time as stored: Unix nanoseconds, NULL for the zero time.
func timeArg(t time.Time) (any, error) {
	if t.IsZero() {
		return nil, nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return nil, fmt.Errorf("time %v is outside the years 1678 to 2262 that can be stored", t)
	}
	return t.UnixNano(), nil
}

func timeFrom(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.Unix(0, v.Int64)
}

type scanner interface{ Scan(dest ...any) error }

// scanAll reads every row a query returned with scan, and closes them; err
// is the query's own. Its errors begin with what: "history: list devices".
func scanAll[T any](rows *sql.Rows, err error, scan func(scanner) (T, error), what string) ([]T, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		t, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

func scanConversation(row scanner) (history.Conversation, error) {
	var c history.Conversation
	var created, updated sql.NullInt64
	var workspace string
	err := row.Scan(&c.ID, &c.Title, &c.Mode, &created, &updated, &c.LastSeq, &c.Streaming, &c.PendingInput, &c.Model, &c.Agent, &workspace)
	c.CreatedAt, c.UpdatedAt = timeFrom(created), timeFrom(updated)
	c.Workspace = workspaceFrom(workspace)
	return c, err
}

func (s *Store) Conversation(ctx context.Context, id string) (history.Conversation, error) {
	c, err := scanConversation(s.selectConv.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return history.Conversation{}, history.ErrNotFound
	}
	if err != nil {
		return history.Conversation{}, fmt.Errorf("history: read conversation %q: %w", id, err)
	}
	return c, nil
}

func (s *Store) Conversations(ctx context.Context) ([]history.Conversation, error) {
	rows, err := s.selectConvs.QueryContext(ctx)
	return scanAll(rows, err, scanConversation, "history: list conversations")
}

// Events reads the conversation's events in pages. A page is read and its
// rows closed before fn sees any of it, so fn may block for as long as it
// likes (a slow client) without keeping a read transaction open, which
// would stop WAL checkpoints and let the log grow. Events are only ever
// added above the conversation's last seq, so paging by seq sees each
// event once.
func (s *Store) Events(ctx context.Context, conversationID string, since int64, fn func(history.Event) error) error {
	page := make([]history.Event, 0, min(s.pageEvents, 64))
	for {
		var full bool
		var err error
		page, full, err = s.eventsPage(ctx, conversationID, since, page[:0])
		if err != nil {
			return err
		}
		for _, e := range page {
			if err := fn(e); err != nil {
				return err
			}
		}
		if !full || len(page) == 0 {
			return nil
		}
		since = page[len(page)-1].Seq
		clear(page) // let the frames already handed to fn go
	}
}

// eventsPage appends to page up to one page of events after since; full
// reports that there may be more.
func (s *Store) eventsPage(ctx context.Context, conversationID string, since int64, page []history.Event) (_ []history.Event, full bool, err error) {
	rows, err := s.selectEvents.QueryContext(ctx, conversationID, since, s.pageEvents)
	if err != nil {
		return page, false, fmt.Errorf("history: read events of %q after %d: %w", conversationID, since, err)
	}
	defer rows.Close()
	n, size := 0, 0
	for rows.Next() {
		e := history.Event{ConversationID: conversationID}
		if err := rows.Scan(&e.Seq, &e.Type, driverBytes{&e.Frame}); err != nil {
			return page, false, fmt.Errorf("history: read events of %q after %d: %w", conversationID, since, err)
		}
		page = append(page, e)
		n++
		if size += len(e.Frame); size >= s.pageBytes {
			return page, true, nil
		}
	}
	if err := rows.Err(); err != nil {
		return page, false, fmt.Errorf("history: read events of %q after %d: %w", conversationID, since, err)
	}
	return page, n == s.pageEvents, nil
}

// driverBytes scans a BLOB column into a []byte without the copy that
// database/sql makes for a *[]byte destination: the SQLite driver
// (modernc.org/sqlite) already returns each value in a slice of its own,
// copied out of SQLite's memory, so a replay copied every frame twice (13
// of the 184 MB a window allocated opening a 5,000-message conversation).
// database/sql's contract lets a driver reuse that memory on the next row;
// this one does not, and the conformance suite's replays, which keep every
// frame of several pages and compare them with what was written, would fail
// if a new version did.
type driverBytes struct{ dst *[]byte }

func (d driverBytes) Scan(src any) error {
	switch v := src.(type) {
	case []byte:
		*d.dst = v
	case string:
		*d.dst = []byte(v)
	case nil:
		*d.dst = nil
	default:
		return fmt.Errorf("a frame of type %T, want BLOB", src)
	}
	return nil
}

// Delete removes the conversation and its events. One whose pages cannot be
// read (zeroed while the relay ran) is removed by rebuilding the events
// table without it (deleteDamaged): a delete is never refused for the
// damage it is meant to get rid of.
func (s *Store) Delete(ctx context.Context, conversationID string) error {
	err := s.deleteRows(ctx, conversationID)
	if err != nil && isCorrupt(err) {
		s.log.Warn("history: the conversation's pages cannot be read; deleting it by rebuilding the events table without them",
			"file", s.path, "conversationId", conversationID, "err", err)
		if derr := s.deleteDamaged(ctx, conversationID); derr != nil {
			return fmt.Errorf("%w; deleting it without reading them failed too: %w", err, derr)
		}
		err = nil
	}
	if err != nil {
		return err
	}
	s.scrub(ctx, conversationID)
	return nil
}

func (s *Store) deleteRows(ctx context.Context, conversationID string) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: delete %q: %w", conversationID, err)
	}
	defer tx.Rollback()
	if _, err := tx.StmtContext(ctx, s.deleteEvents).ExecContext(ctx, conversationID); err != nil {
		return fmt.Errorf("history: delete events of %q: %w", conversationID, err)
	}
	if _, err := tx.StmtContext(ctx, s.deleteConv).ExecContext(ctx, conversationID); err != nil {
		return fmt.Errorf("history: delete %q: %w", conversationID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: delete %q: commit: %w", conversationID, err)
	}
	return nil
}

// scrub makes a deletion reach every file of the data dir. secure_delete
// overwrites the deleted rows with zeros, but in WAL mode it does so in new
// pages of the write-ahead log, which still holds the old pages with the
// text until a checkpoint copies the new ones into the database and the
// log is reset; a clean close does that, a SIGKILL does not. So a
// TRUNCATE checkpoint: the database file gets the zeroed pages (synced) and
// the log is cut to nothing. It waits (busy_timeout) for readers to leave
// the log; readers never hold it across a callback, so that is short. A
// failure is logged, not returned: the rows are deleted, and the next
// checkpoint (a later delete, or Close) clears the log.
func (s *Store) scrub(ctx context.Context, what string) {
	var busy, logFrames, moved int
	err := s.w.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &moved)
	if err == nil && busy != 0 {
		err = fmt.Errorf("readers kept %d of %d frames of the log busy", logFrames-moved, logFrames)
	}
	if err != nil {
		s.log.Warn("history: a deletion could not be checkpointed out of the write-ahead log yet; its text stays there until the next checkpoint",
			"file", s.path, "deleted", what, "err", err)
	}
}

// DeleteOlderThan removes the conversations last updated before cutoff,
// and their events (--history-max-age), and returns how many it removed.
// Each conversation goes in its own transaction, so a large clean-up never
// holds the writer for long.
func (s *Store) DeleteOlderThan(ctx context.Context, cutoff time.Time) (int, error) {
	if cutoff.IsZero() || cutoff.Before(minTime) {
		return 0, nil
	}
	limit := cutoff.UnixNano()
	if cutoff.After(maxTime) {
		limit = math.MaxInt64
	}
	rows, err := s.selectOlder.QueryContext(ctx, limit)
	if err != nil {
		return 0, fmt.Errorf("history: find conversations older than %v: %w", cutoff, err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("history: find conversations older than %v: %w", cutoff, err)
		}
		ids = append(ids, id)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return 0, fmt.Errorf("history: find conversations older than %v: %w", cutoff, err)
	}
	n := 0
	// One checkpoint for the whole clean-up, also after a failure midway.
	defer func() {
		if n > 0 {
			s.scrub(ctx, fmt.Sprintf("%d conversations older than %v", n, cutoff))
		}
	}()
	for _, id := range ids {
		deleted, err := s.deleteIfOlder(ctx, id, limit)
		if err != nil {
			return n, err
		}
		if deleted {
			n++
		}
	}
	return n, nil
}

// deleteIfOlder deletes the conversation if it is still older than limit
// (it may have been written since it was found).
func (s *Store) deleteIfOlder(ctx context.Context, id string, limit int64) (bool, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("history: delete %q: %w", id, err)
	}
	defer tx.Rollback()
	res, err := tx.StmtContext(ctx, s.deleteConvOlder).ExecContext(ctx, id, limit)
	if err != nil {
		return false, fmt.Errorf("history: delete %q: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	if _, err := tx.StmtContext(ctx, s.deleteEvents).ExecContext(ctx, id); err != nil {
		return false, fmt.Errorf("history: delete events of %q: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("history: delete %q: commit: %w", id, err)
	}
	return true, nil
}

func (s *Store) closeStatements() {
	for _, st := range append([]*sql.Stmt{s.upsertConv, s.deleteEvents, s.deleteConv, s.deleteConvOlder,
		s.selectEvents, s.selectConv, s.selectConvs, s.selectOlder, s.upsertSpend, s.selectSpend}, s.insertEvents[:]...) {
		if st != nil {
			st.Close()
		}
	}
}

// Close closes the database; the last connection to close checkpoints the
// write-ahead log into the database file. Calling it again returns the
// first result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeStatements()
		var rerr error
		if s.r != s.w {
			rerr = s.r.Close()
		}
		// Let SQLite refresh its statistics for the query planner, as its
		// documentation advises before closing.
		_, _ = s.w.Exec("PRAGMA optimize")
		werr := s.w.Close()
		s.guardMu.Lock()
		gerr := s.guard.Close()
		s.guard = nil
		s.guardMu.Unlock()
		lerr := s.lock.Close()
		if err := errors.Join(werr, rerr, gerr, lerr); err != nil {
			s.closeErr = fmt.Errorf("history: close %s: %w", s.path, err)
		}
	})
	return s.closeErr
}
