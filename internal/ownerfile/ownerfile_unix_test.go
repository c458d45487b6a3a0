//go:build !windows

package ownerfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRestrictModes: a new data dir 0700 (its parents too), one the user
// made before left as it was, and a restricted file 0600 whatever its mode
// was.
func TestRestrictModes(t *testing.T) {
	t.Parallel()
	existing := filepath.Join(t.TempDir(), "mine")
	if err := os.Mkdir(existing, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(existing); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(existing); fi.Mode().Perm() != 0o750 {
		t.Errorf("an existing dir became %o", fi.Mode().Perm())
	}
	dir := filepath.Join(t.TempDir(), "new", "data")
	if err := MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "relay.json")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Restrict(file); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, file: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", path, got, want)
		}
	}
	if err := Restrict(filepath.Join(dir, "missing")); err == nil {
		t.Error("Restrict of a missing file succeeded")
	}
}
