package filelock

import (
	"errors"
	"io/fs"
	"os"
)

// Probe reports whether another process holds the lock of the file at
// path, as TryLock would find; a file that does not exist is not held.
// The lock taken to find out is dropped at once (closing the file). The
// history's and the embedded node's stores ask it of each other's lock,
// since a relay takes only its own.
func Probe(path string) (held bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	return TryLock(f)
}
