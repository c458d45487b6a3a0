package sqlite

import (
	"errors"
	"fmt"
	"path/filepath"
)

// The kinds of OpenError; test them with errors.Is.
var (
	// ErrNotHistory: the file is not a pilotdesk history database (not
	// SQLite at all, empty, or another program's database).
	ErrNotHistory = errors.New("not a pilotdesk history database")
	// ErrCorrupt: the file is a pilotdesk history database but is damaged.
	ErrCorrupt = errors.New("the history database is damaged")
	// ErrTooNew: the file was written by a newer pilotdesk.
	ErrTooNew = errors.New("the history database is from a newer pilotdesk")
	// ErrAccess: the file or its directory cannot be read or written.
	ErrAccess = errors.New("the history database cannot be read and written")
	// ErrInUse: another relay has the data dir open.
	ErrInUse = errors.New("the history database is in use by another relay")
)

// OpenError is why Open could not use a database as it is. Open never
// repairs, resets or replaces a database it cannot use: it stops with an
// OpenError that names the file and says what the user can do.
type OpenError struct {
	Path   string // the file or directory at fault
	Kind   error  // one of ErrNotHistory, ErrCorrupt, ErrTooNew, ErrAccess, ErrInUse
	Detail string // what was found
	Fix    string // what the user can do
	Err    error  // the underlying error, if any
}

func (e *OpenError) Error() string {
	msg := fmt.Sprintf("history database %s: %v: %s", e.Path, e.Kind, e.Detail)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Fix != "" {
		msg += "; " + e.Fix
	}
	return msg
}

func (e *OpenError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// moveAside is the advice for a database pilotdesk cannot use: keep it (it
// may be recoverable) and let pilotdesk start a new history.
func moveAside(path string) string {
	base := filepath.Base(path)
	return fmt.Sprintf("pilotdesk has not changed it; to start a new, empty history, move %s and any %s-wal and %s-shm next to it out of %s (e.g. mv %s %s.broken), or choose another --data-dir",
		base, base, base, filepath.Dir(path), path, path)
}

func fixAccess(path string, dir bool) string {
	if dir {
		return fmt.Sprintf("make the directory readable and writable by this user (chmod 700 %s), or choose another --data-dir", path)
	}
	return fmt.Sprintf("make the file readable and writable by this user (chmod 600 %s), or choose another --data-dir", path)
}
