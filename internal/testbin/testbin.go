// Package testbin builds the pilotdesk binary for the tests that run it as a
// process: the serve and chat commands, the reliability suite and the load
// tool.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once sync.Once
	path string
	err  error
)

// Build builds the binary once per test process and returns its path. The
// ci tag swaps Fyne's GL driver for its software one (no display, no GL
// compile); the relay, the agents and the history store are the same code
// either way. Tests that need the binary are skipped under -short. A
// package that calls Build removes the binary by calling Cleanup from its
// TestMain.
func Build(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the pilotdesk binary")
	}
	once.Do(func() {
		_, file, _, ok := runtime.Caller(0)
		if !ok {
			err = fmt.Errorf("testbin: cannot locate the module")
			return
		}
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, mkErr := os.MkdirTemp("", "pilotdesk-bin")
		if mkErr != nil {
			err = mkErr
			return
		}
		path = filepath.Join(dir, "pilotdesk")
		cmd := exec.Command("go", "build", "-tags", "ci", "-o", path, ".")
		cmd.Dir = root
		if out, buildErr := cmd.CombinedOutput(); buildErr != nil {
			err = fmt.Errorf("go build: %v\n%s", buildErr, out)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Cleanup removes the binary Build made, if any.
func Cleanup() {
	if path != "" {
		os.RemoveAll(filepath.Dir(path))
	}
}
