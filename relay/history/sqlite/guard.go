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
	"os"
	"path/filepath"

	"github.com/pilotdesk/pilotdesk/internal/atomicfile"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// guardName is the file that says whether the relay sent events this
// database does not hold (history.UnstoredGuard).
//
// It cannot live in the database: it is written exactly when the database
// cannot be, because the disk is full. So it is a file of its own, written
// whole (guardSize bytes, no holes) and synced while there is space, and
// from then on only overwritten in place, which needs no new blocks on the
// file systems the relay runs on (ext4, xfs, tmpfs, APFS). On a
// copy-on-write file system an overwrite may fail with ENOSPC too: then
// MarkUnstored fails and the relay sends nothing it has not stored.
const guardName = "history.guard"

// guardSize is one block of every common file system.
const guardSize = 4096

// The guard's two states. Anything else (a file cut short by a crash while
// it was being created, or changed by hand) counts as unstored, which only
// costs clients a replay.
var (
	guardClean    = guardRecord("pilotdesk history guard 1\nevery event sent is stored\n")
	guardUnstored = guardRecord("pilotdesk history guard 1\nevents were sent that may not be stored: the next open makes a new epoch\n")
)

func guardRecord(text string) []byte {
	b := make([]byte, guardSize)
	copy(b, text)
	return b
}

// openGuard opens the data dir's guard file, creating it (clean) when
// there is none, and reports whether it says that the last run sent events
// it could not store.
func openGuard(dir string, log *slog.Logger) (f *os.File, unstored bool, err error) {
	path := filepath.Join(dir, guardName)
	f, err = os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createGuard(path, guardClean); err != nil {
			return nil, false, err
		}
		f, err = os.OpenFile(path, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, false, &OpenError{Path: path, Kind: ErrAccess, Detail: "cannot open the guard file", Err: err, Fix: fixAccess(path, false)}
	}
	buf := make([]byte, guardSize)
	n, err := io.ReadFull(f, buf)
	switch {
	case err == nil && bytes.Equal(buf, guardClean):
		return f, false, nil
	case err == nil && bytes.Equal(buf, guardUnstored):
		return f, true, nil
	}
	// Not one of ours: assume the worst. A guard cut short cannot be
	// overwritten in place without growing, so it is made anew, still
	// saying so until the new epoch is recorded.
	log.Warn("history: the guard file is not as pilotdesk writes it; treating it as saying that events were sent unstored", "file", path, "bytes", n, "err", err)
	f.Close()
	if err := createGuard(path, guardUnstored); err != nil {
		return nil, false, err
	}
	if f, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
		return nil, false, &OpenError{Path: path, Kind: ErrAccess, Detail: "cannot open the guard file", Err: err, Fix: fixAccess(path, false)}
	}
	return f, true, nil
}

// createGuard writes a guard holding record under another name and renames
// it into place, so that a crash never leaves half a guard at path.
func createGuard(path string, record []byte) error {
	if err := atomicfile.WriteFile(path, record, atomicfile.Private); err != nil {
		return fmt.Errorf("history: create the guard file: %w", err)
	}
	return nil
}

// renewEpoch gives the history a new epoch, for a data dir whose guard says
// that the last run sent events it did not store: clients may hold those
// seqs, and this run could hand them out again for other events.
func renewEpoch(ctx context.Context, w *sql.DB, path, old string, log *slog.Logger) (string, error) {
	epoch := history.NewEpoch()
	if _, err := w.ExecContext(ctx, `UPDATE meta SET value = ? WHERE key = 'epoch'`, epoch); err != nil {
		return "", fmt.Errorf("history: %s: record a new epoch: %w", path, err)
	}
	log.Warn("history: the last run sent events it could not store; the history gets a new epoch, so clients replay it instead of taking new events for ones they have",
		"file", path, "oldEpoch", old, "epoch", epoch)
	return epoch, nil
}

// writeGuard overwrites the guard in place and syncs it.
func (s *Store) writeGuard(record []byte) error {
	s.guardMu.Lock()
	defer s.guardMu.Unlock()
	if s.guard == nil {
		return errors.New("history: the store is closed")
	}
	if _, err := s.guard.WriteAt(record, 0); err != nil {
		return fmt.Errorf("history: write the guard file: %w", err)
	}
	if err := s.guard.Sync(); err != nil {
		return fmt.Errorf("history: sync the guard file: %w", err)
	}
	return nil
}

// MarkUnstored records, in place and synced, that the relay may send events
// this database does not hold: the next Open gives the history a new epoch.
func (s *Store) MarkUnstored() error { return s.writeGuard(guardUnstored) }

// ClearUnstored records that every event sent is stored.
func (s *Store) ClearUnstored() error { return s.writeGuard(guardClean) }

var _ history.UnstoredGuard = (*Store)(nil)
