package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/pilotdesk/pilotdesk/internal/atomicfile"
	"github.com/pilotdesk/pilotdesk/internal/filelock"
	"github.com/pilotdesk/pilotdesk/internal/ownerfile"
)

// FileName is the database file inside the data dir.
const FileName = "history.db"

// lockName is the file whose lock says a relay has the data dir open.
const lockName = "history.lock"

// sqliteMagic starts every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// Options tune a Store; the zero value is the documented default.
type Options struct {
	// Synchronous is SQLite's synchronous setting. "FULL" (the default)
	// makes every commit wait for fsync of the write-ahead log, so a
	// committed event survives a crash of the relay and of the machine.
	// "NORMAL" survives a crash of the relay (SIGKILL: the log is in the
	// OS's cache) but a power loss may undo the last commits; the relay
	// would then hand out again, under the same epoch, seqs that clients
	// already saw, and a client resuming past them would miss the new
	// events. FULL costs one fsync per commit, which the relay's group
	// commit shares among all the events of a batch (BenchmarkWrite).
	// "EXTRA" is accepted and, in WAL mode, is the same as FULL.
	Synchronous string
	// ReadConns is the number of connections that serve Events,
	// Conversation and Conversations beside the one writer connection
	// (WAL lets readers run while it commits). Default: half the CPUs, at
	// least one, so that many clients replaying at once leave CPU for the
	// live conversations' commits (BenchmarkReplayWhileWriting).
	ReadConns int
	// PageEvents is how many events Events reads per query; between pages
	// it holds no read transaction. Default 500.
	PageEvents int
	// PageBytes ends a page early once its frames reach this many bytes,
	// so a page of big tool outputs stays small. Default 1 MiB.
	PageBytes int
	// BusyTimeoutMillis is how long a connection waits for a lock.
	// Default 10000.
	BusyTimeoutMillis int
	// SkipCheck skips PRAGMA quick_check at Open (it reads the whole file:
	// see the package benchmarks for its cost on a large history).
	SkipCheck bool
	// Logger gets warnings (permissions tightened, migrations). Default
	// slog.Default().
	Logger *slog.Logger

	// migrations replaces the schema's migrations in tests.
	migrations []migration
	// sharedPool makes reads use the writer's connection, for the
	// benchmark that justifies the separate read pool.
	sharedPool bool
}

func (o *Options) setDefaults() error {
	switch s := strings.ToUpper(o.Synchronous); s {
	case "":
		o.Synchronous = "FULL"
	case "NORMAL", "FULL", "EXTRA":
		o.Synchronous = s
	default:
		return fmt.Errorf("history: synchronous %q: want FULL, NORMAL or EXTRA", o.Synchronous)
	}
	if o.ReadConns <= 0 {
		o.ReadConns = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if o.PageEvents <= 0 {
		o.PageEvents = 500
	}
	if o.PageBytes <= 0 {
		o.PageBytes = 1 << 20
	}
	if o.BusyTimeoutMillis <= 0 {
		o.BusyTimeoutMillis = 10000
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.migrations == nil {
		o.migrations = migrations
	}
	return nil
}

// Open opens the history database in dir, creating dir (0700) and the
// database (0600, with a new epoch) if they do not exist, and migrating an
// older schema. A database it cannot use is an *OpenError; Open never
// resets or replaces one.
func Open(ctx context.Context, dir string, opts Options) (st *Store, err error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("history: data dir: %w", err)
	}
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	lock, err := takeLock(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()

	path := filepath.Join(dir, FileName)
	if err := checkFile(path, opts.Logger); errors.Is(err, fs.ErrNotExist) {
		if err := create(ctx, path, opts); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}

	w, err := sql.Open("sqlite", dsn(path, opts, false))
	if err != nil {
		return nil, fmt.Errorf("history: open %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			w.Close()
		}
	}()
	// One connection does every write, so writes never wait on SQLite's
	// lock and its prepared statements are reused (database/sql keeps them
	// per connection). Keep it forever.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	if err := inspect(ctx, w, path, opts); err != nil {
		return nil, err
	}
	if err := migrate(ctx, w, opts.migrations); err != nil {
		return nil, classify(path, "migrating the schema", err)
	}
	var mode string
	if err := w.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil || mode != "wal" {
		return nil, classify(path, "switching to write-ahead logging", errors.Join(err, fmt.Errorf("journal mode is %q", mode)))
	}
	var fk bool
	if err := w.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil || !fk {
		return nil, fmt.Errorf("history: %s: foreign keys are not enforced (%v)", path, err)
	}
	var epoch string
	if err := w.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'epoch'`).Scan(&epoch); err != nil || epoch == "" {
		return nil, &OpenError{Path: path, Kind: ErrCorrupt, Detail: "it has no epoch", Err: err, Fix: moveAside(path)}
	}
	guard, unstored, err := openGuard(dir, opts.Logger)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			guard.Close()
		}
	}()
	if unstored {
		if epoch, err = renewEpoch(ctx, w, path, epoch, opts.Logger); err != nil {
			return nil, err
		}
		// Only now that the new epoch is committed: a crash before this
		// line renews it once more, which costs nothing.
		if _, err = guard.WriteAt(guardClean, 0); err == nil {
			err = guard.Sync()
		}
		if err != nil {
			return nil, fmt.Errorf("history: %s: clear the guard file: %w", path, err)
		}
	}

	r := w
	if !opts.sharedPool {
		if r, err = sql.Open("sqlite", dsn(path, opts, true)); err != nil {
			return nil, fmt.Errorf("history: open %s: %w", path, err)
		}
		r.SetMaxOpenConns(opts.ReadConns)
		r.SetMaxIdleConns(opts.ReadConns)
	}
	st = &Store{
		path:       path,
		epoch:      epoch,
		log:        opts.Logger,
		w:          w,
		r:          r,
		lock:       lock,
		guard:      guard,
		pageEvents: opts.PageEvents,
		pageBytes:  opts.PageBytes,
		deviceDB:   deviceDB{w: w, r: r},
	}
	if err := st.prepare(ctx); err != nil {
		st.closeStatements()
		if r != w {
			r.Close()
		}
		return nil, err
	}
	return st, nil
}

// readerCacheKiB is the page cache of each reading connection (dsn).
const readerCacheKiB = 256

// dsn is the connection string of one of the store's connections. mode=rw:
// a connection never creates the file (create does, with its permissions).
func dsn(path string, opts Options, reader bool) string {
	q := url.Values{}
	q.Set("mode", "rw")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeoutMillis))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous("+opts.Synchronous+")")
	if reader {
		q.Add("_pragma", "query_only(1)")
		// A reader's page cache: 256 KiB, not SQLite's default of 2,000
		// KiB. Readers replay histories, each page read once in seq
		// order, and the operating system caches the file anyway; a
		// full default cache only kept the last 2 MB of the last replay
		// in the process (the window's RSS after opening a 5,000-message
		// conversation: 3.5 MiB less with 128 KiB). The writer keeps
		// the default: its commits reuse the same pages.
		q.Add("_pragma", fmt.Sprintf("cache_size(-%d)", readerCacheKiB))
	} else {
		// Deleted conversations are overwritten with zeros in the
		// database file, not just unlinked (copilot:delete).
		q.Add("_pragma", "secure_delete(1)")
		// Take the write lock at BEGIN: a transaction that reads first
		// and upgrades later could fail with SQLITE_BUSY midway.
		q.Set("_txlock", "immediate")
	}
	u := url.URL{Scheme: "file", Path: uriPath(path), RawQuery: q.Encode()}
	return u.String()
}

// uriPath is path as a file: URI's path. A Windows path with a drive
// (C:\Users\…) takes a leading slash: SQLite reads file:///C:/Users/…, and
// file://C:/… (which the URL would be without it) as a host named "C:".
func uriPath(path string) string {
	p := filepath.ToSlash(path)
	if vol := filepath.VolumeName(path); len(vol) == 2 && vol[1] == ':' {
		p = "/" + p
	}
	return p
}

func prepareDir(dir string) error {
	if err := ownerfile.MkdirAll(dir); err != nil {
		return &OpenError{Path: dir, Kind: ErrAccess, Detail: "cannot create the data dir", Err: err, Fix: fixAccess(filepath.Dir(dir), true)}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return &OpenError{Path: dir, Kind: ErrAccess, Detail: "cannot read the data dir", Err: err, Fix: fixAccess(dir, true)}
	}
	if !fi.IsDir() {
		return &OpenError{Path: dir, Kind: ErrAccess, Detail: "the data dir is not a directory", Fix: "choose another --data-dir"}
	}
	// SQLite must create its -wal and -shm files next to the database:
	// find out now, with a clear error, whether it can.
	probe, err := os.CreateTemp(dir, ".write-probe-*")
	if err != nil {
		return &OpenError{Path: dir, Kind: ErrAccess, Detail: "cannot create files in the data dir", Err: err, Fix: fixAccess(dir, true)}
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// Held reports whether a relay holds dir's history (its lock), and who
// ("process N" when it says). A relay with --nats embedded checks it
// before it starts its node there, since the two stores take different
// locks and it would otherwise start beside the first and take its
// relay.json. The lock taken to find out is dropped at once; a data dir
// with no history is not held.
func Held(dir string) (who string, held bool, err error) {
	path := filepath.Join(dir, lockName)
	if held, err = filelock.Probe(path); err != nil {
		return "", false, &OpenError{Path: path, Kind: ErrAccess, Detail: "cannot probe the lock file", Err: err}
	} else if !held {
		return "", false, nil
	}
	who = "another process"
	if owner, err := os.ReadFile(path); err == nil && len(owner) <= 32 && strings.TrimSpace(string(owner)) != "" {
		who = "process " + strings.TrimSpace(string(owner))
	}
	return who, true, nil
}

func takeLock(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, &OpenError{Path: path, Kind: ErrAccess, Detail: "cannot open the lock file", Err: err, Fix: fixAccess(path, false)}
	}
	held, err := filelock.TryLock(f)
	if err != nil {
		f.Close()
		return nil, &OpenError{Path: path, Kind: ErrAccess, Detail: "cannot lock the data dir", Err: err}
	}
	if held {
		owner, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		who := "another process"
		if pid := strings.TrimSpace(string(owner)); pid != "" {
			who = "process " + pid
		}
		return nil, &OpenError{Path: filepath.Join(dir, FileName), Kind: ErrInUse, Detail: who + " has the data dir open",
			Fix: "stop that relay or app, or choose another --data-dir"}
	}
	// Say who holds it, for the message above; best effort.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// checkFile looks at the database file before SQLite does, so that the
// common ways of being unusable get a precise message and SQLite never
// writes to a file that is not ours. It returns fs.ErrNotExist when there
// is no database yet.
func checkFile(path string, log *slog.Logger) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fs.ErrNotExist
	}
	if err != nil {
		return &OpenError{Path: path, Kind: ErrAccess, Detail: "cannot look at the file", Err: err, Fix: fixAccess(filepath.Dir(path), true)}
	}
	if !fi.Mode().IsRegular() {
		what := "a directory"
		if !fi.IsDir() {
			what = "not a regular file (" + fi.Mode().String() + ")"
		}
		return &OpenError{Path: path, Kind: ErrNotHistory, Detail: "it is " + what, Fix: moveAside(path)}
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return &OpenError{Path: path, Kind: ErrAccess, Detail: "cannot open it for reading and writing", Err: err, Fix: fixAccess(path, false)}
	}
	defer f.Close()
	if fi.Size() == 0 {
		// pilotdesk never leaves an empty database (it creates one under
		// another name and renames it when complete), so this file was
		// truncated or made by someone else.
		return &OpenError{Path: path, Kind: ErrNotHistory, Detail: "the file is empty (0 bytes)", Fix: moveAside(path)}
	}
	header := make([]byte, 100)
	if n, err := io.ReadFull(f, header); err != nil || !bytes.Equal(header[:len(sqliteMagic)], sqliteMagic) {
		detail := "it is not a SQLite database"
		if n < len(header) && bytes.HasPrefix(sqliteMagic, header[:min(n, len(sqliteMagic))]) {
			detail = fmt.Sprintf("it is cut short (%d bytes)", fi.Size())
		}
		return &OpenError{Path: path, Kind: ErrNotHistory, Detail: detail, Fix: moveAside(path)}
	}
	// History is private: tighten a file that others may read. SQLite
	// gives the -wal and -shm files the database's permissions.
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(p, fi.Mode().Perm()&0o700); err != nil {
			return &OpenError{Path: p, Kind: ErrAccess, Detail: fmt.Sprintf("others may read it (%v) and it cannot be made private", fi.Mode().Perm()), Err: err, Fix: fmt.Sprintf("chmod 600 %s", p)}
		}
		log.Warn("history: others could read the history database; made it private", "file", p, "was", fi.Mode().Perm().String())
	}
	return nil
}

// create makes a new database at path: it is built under another name and
// renamed into place once its schema and epoch are committed, so a crash
// during creation never leaves a half-made database behind.
func create(ctx context.Context, path string, opts Options) error {
	// A log or journal without its database must not be replayed into a
	// new one: SQLite would apply the old pages to the new file.
	for _, p := range []string{path + "-wal", path + "-journal"} {
		if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
			return &OpenError{Path: p, Kind: ErrCorrupt, Detail: fmt.Sprintf("it is left over without its database %s", filepath.Base(path)),
				Fix: fmt.Sprintf("if %s was moved away on purpose, move %s with it; pilotdesk will then start a new, empty history", filepath.Base(path), filepath.Base(p))}
		}
	}
	_ = os.Remove(path + "-shm") // rebuilt by SQLite; never holds data

	tmp := path + ".new"
	for _, p := range []string{tmp, tmp + "-wal", tmp + "-shm", tmp + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("history: remove %s left by an earlier attempt: %w", p, err)
		}
	}
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return &OpenError{Path: tmp, Kind: ErrAccess, Detail: "cannot create the database", Err: err, Fix: fixAccess(filepath.Dir(path), true)}
	}
	f.Close()
	db, err := sql.Open("sqlite", dsn(tmp, opts, false))
	if err != nil {
		return fmt.Errorf("history: create %s: %w", tmp, err)
	}
	db.SetMaxOpenConns(1)
	_, err = db.ExecContext(ctx, "PRAGMA journal_mode = WAL")
	if err == nil {
		err = migrate(ctx, db, opts.migrations)
	}
	// Closing the last connection checkpoints the log into the file and
	// removes it, so the renamed file is complete on its own.
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if _, serr := os.Stat(tmp + "-wal"); serr == nil {
			err = fmt.Errorf("its write-ahead log was not checkpointed")
		}
	}
	if err == nil {
		err = atomicfile.Replace(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("history: create %s: %w", path, err)
	}
	opts.Logger.Info("history: created a new history database", "file", path)
	return nil
}

// inspect checks the database before anything writes to it: that it is
// whole, that it is ours, and that its schema is one this code knows.
func inspect(ctx context.Context, db *sql.DB, path string, opts Options) error {
	if !opts.SkipCheck {
		// The check reads every page of the file, so it runs on a
		// connection of its own with a reader's small cache, closed
		// after it: through the writer it filled the writer's 2,000 KiB
		// cache with pages no commit needs, and SQLite's allocator keeps
		// the memory it used for reuse. The desktop window, whose
		// embedded relay opens the history at every start, held 4 MiB
		// more for it, idle and after opening a long conversation
		// (docs/performance.md).
		check, err := sql.Open("sqlite", dsn(path, opts, true))
		if err != nil {
			return fmt.Errorf("history: open %s: %w", path, err)
		}
		defer check.Close()
		rows, err := check.QueryContext(ctx, "PRAGMA quick_check(20)")
		if err != nil {
			return classify(path, "checking the database", err)
		}
		var problems []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				rows.Close()
				return classify(path, "checking the database", err)
			}
			if line != "ok" {
				problems = append(problems, line)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return classify(path, "checking the database", err)
		}
		if len(problems) > 0 {
			return &OpenError{Path: path, Kind: ErrCorrupt, Detail: "quick_check found: " + strings.Join(problems, "; "), Fix: moveAside(path)}
		}
	}
	var appID, version, objects int
	err := db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID)
	if err == nil {
		err = db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version)
	}
	if err == nil {
		err = db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&objects)
	}
	if err != nil {
		return classify(path, "reading the schema version", err)
	}
	switch {
	case appID == applicationID:
	case appID == 0 && version == 0 && objects == 0:
		// An empty SQLite database (schema version 0): nothing to lose,
		// migrate it like any older version.
	default:
		return &OpenError{Path: path, Kind: ErrNotHistory,
			Detail: fmt.Sprintf("it is another program's SQLite database (application_id %#x, user_version %d, %d schema objects)", appID, version, objects),
			Fix:    moveAside(path)}
	}
	if known := len(opts.migrations); version > known {
		return &OpenError{Path: path, Kind: ErrTooNew,
			Detail: fmt.Sprintf("its schema version is %d and this pilotdesk knows versions up to %d", version, known),
			Fix:    "run the newer pilotdesk that wrote it, or " + moveAside(path)}
	}
	if version < len(opts.migrations) && version > 0 {
		opts.Logger.Info("history: migrating the history database", "file", path, "from", version, "to", len(opts.migrations))
	}
	return nil
}

// classify turns an error from SQLite while opening into an OpenError of
// the right kind, or wraps it as is.
func classify(path, doing string, err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("history: %s: %s: %w", path, doing, err)
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_NOTADB:
		return &OpenError{Path: path, Kind: ErrNotHistory, Detail: doing, Err: err, Fix: moveAside(path)}
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_FORMAT:
		return &OpenError{Path: path, Kind: ErrCorrupt, Detail: doing, Err: err, Fix: moveAside(path)}
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_AUTH:
		return &OpenError{Path: path, Kind: ErrAccess, Detail: doing, Err: err, Fix: fixAccess(path, false)}
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return &OpenError{Path: path, Kind: ErrInUse, Detail: doing, Err: err, Fix: "stop the other program that has it open"}
	}
	return fmt.Errorf("history: %s: %s: %w", path, doing, err)
}
