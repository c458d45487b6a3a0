//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

// Package filelock takes the lock that keeps two processes off one data
// dir: the SQLite history's and the embedded NATS node's.
package filelock

import (
	"errors"
	"os"
	"syscall"
)

// TryLock takes an exclusive, non-blocking lock on f that the kernel
// drops when the process dies, however it dies. held reports that another
// process holds it.
func TryLock(f *os.File) (held bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}
