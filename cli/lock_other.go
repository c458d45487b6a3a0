//go:build !unix

package cli

import "os"

// Other platforms rely on SQLite's own locking; two relays on one data dir
// there are a user error we cannot detect early.
func lockFile(f *os.File) error { return nil }

func unlockFile(f *os.File) {}
