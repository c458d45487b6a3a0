//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package jetstream

import "os"

// lockFile is a no-op where flock(2) is missing: a second embedded node on
// the same data dir is not refused there.
func lockFile(f *os.File) (held bool, err error) { return false, nil }
