//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows

package filelock

import (
	"os"
	"path/filepath"
	"testing"
)

// TestProbe: a lock file that is missing or free is not held, one locked
// through another open file is, and probing leaves a free one free.
func TestProbe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	if held, err := Probe(path); err != nil || held {
		t.Fatalf("a missing file: held %v, %v", held, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if held, err := Probe(path); err != nil || held {
		t.Fatalf("a free file: held %v, %v", held, err)
	}
	if held, err := TryLock(f); err != nil || held {
		t.Fatalf("locking the free file after a probe: held %v, %v", held, err)
	}
	if held, err := Probe(path); err != nil || !held {
		t.Fatalf("a locked file: held %v, %v", held, err)
	}
	f.Close()
	if held, err := Probe(path); err != nil || held {
		t.Fatalf("a file unlocked again: held %v, %v", held, err)
	}
}
