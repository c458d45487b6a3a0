//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package sqlite

import "os"

// lockFile does nothing here: on these systems two relays on one data dir
// are not detected (SQLite's own locking still keeps the file consistent).
func lockFile(f *os.File) (held bool, err error) { return false, nil }
