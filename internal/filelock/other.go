//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

// Package filelock takes the lock that keeps two processes off one data
// dir: the SQLite history's and the embedded NATS node's.
package filelock

import "os"

// TryLock does nothing where flock(2) is missing: a second process on the
// same data dir is not refused there (SQLite's own locking still keeps its
// file consistent).
func TryLock(f *os.File) (held bool, err error) { return false, nil }
