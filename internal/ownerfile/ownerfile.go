// Package ownerfile keeps the files that hold secrets (relay.json with the
// owner's token, TLS keys, device identities) and the data dir they live
// in readable by the user who runs pilotdesk and nobody else: a POSIX mode
// on Unix, an access-control list on Windows, where modes mean nothing.
package ownerfile

import (
	"fmt"
	"os"
)

// MkdirAll makes dir (and its parents) and restricts dir to its owner, so
// that what is created in it is the owner's alone too (on Windows by
// inheritance of the folder's access list). A dir that exists already is
// left as it is, as os.MkdirAll leaves its mode: the user chose it.
func MkdirAll(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := restrict(dir, true); err != nil {
		return fmt.Errorf("restricting %s to its owner: %w", dir, err)
	}
	return nil
}

// Restrict makes the file at path readable and writable by its owner alone.
func Restrict(path string) error {
	if err := restrict(path, false); err != nil {
		return fmt.Errorf("restricting %s to its owner: %w", path, err)
	}
	return nil
}
