// Package atomicfile replaces a file whole: a reader, or the file after a
// crash or a power cut, is the old one or the new one, never a mix or a
// part. The new content is written to a temporary file in the same
// folder, flushed to disk, renamed over the old file, and the folder is
// flushed so that the rename is on disk too.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/pilotdesk/pilotdesk/internal/ownerfile"
)

// Access says who may read the new file.
type Access int

const (
	// Private files (0600 on Unix) keep, on Windows, the access list
	// they inherit from their folder: a restricted data dir's passes on
	// to them (ownerfile.MkdirAll).
	Private Access = iota
	// OwnerOnly files hold secrets: restricted to their user by
	// ownerfile.Restrict before a byte is written (on Windows an access
	// list of their own, whatever the folder's).
	OwnerOnly
)

// WriteFile replaces the file at path with data.
func WriteFile(path string, data []byte, access Access) error {
	return Write(path, access, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write replaces the file at path with what write writes. If write, or
// any step after it, fails, the file at path is as it was and no
// temporary file is left.
func Write(path string, access Access, write func(w io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp") // 0600
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			_ = os.Remove(tmp.Name())
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	if access == OwnerOnly {
		if err := ownerfile.Restrict(tmp.Name()); err != nil {
			return err
		}
	}
	if err := write(tmp); err != nil {
		return err
	}
	// Flushed through the handle that wrote it: Windows flushes only a
	// handle that may write.
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return rename(tmp.Name(), path)
}

// Replace moves tmp, a complete file in path's folder that something else
// wrote (a database built under another name), over path: it flushes tmp
// to disk, renames it and flushes the folder. On failure tmp is removed
// and path is as it was.
func Replace(tmp, path string) error {
	err := syncFile(tmp)
	if err == nil {
		err = rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return nil
}

// rename renames tmp over path and flushes the folder.
func rename(tmp, path string) error {
	if filepath.Dir(tmp) != filepath.Dir(path) {
		return errors.New("the temporary file is in another folder: a rename would not be atomic")
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncFile flushes a file to disk. It is opened for writing: Windows
// flushes only a handle that may write ("Access denied" otherwise).
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// syncDir flushes a folder's entries (a rename or a file created in it)
// to disk. Windows has no such call, and needs none: NTFS journals its
// folders' changes.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
