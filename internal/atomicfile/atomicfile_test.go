package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// entries is what dir holds, by name.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func wantFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s holds %q, want %q", path, got, want)
	}
}

// TestWriteFile: a new file, then one replaced, each whole, 0600 on Unix,
// and no temporary file left.
func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, content := range []string{`{"a":1}`, `{"b":2}`} {
		if err := WriteFile(path, []byte(content), Private); err != nil {
			t.Fatal(err)
		}
		wantFile(t, path, content)
		if got := entries(t, dir); !slices.Equal(got, []string{"state.json"}) {
			t.Fatalf("the folder holds %v", got)
		}
		if runtime.GOOS != "windows" {
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Fatalf("mode %o, want 600", fi.Mode().Perm())
			}
		}
	}
}

// TestWriteFailsMidway: a write that fails after writing part of the new
// content leaves the old file as it was, and no temporary file.
func TestWriteFailsMidway(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	err := Write(path, OwnerOnly, func(w io.Writer) error {
		if _, err := w.Write([]byte("half of the n")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write: %v, want the writer's error", err)
	}
	wantFile(t, path, "old")
	if got := entries(t, dir); !slices.Equal(got, []string{"state.json"}) {
		t.Fatalf("the folder holds %v", got)
	}
}

// TestRenameFails: when the rename fails (here path is a folder), path is
// as it was and the temporary file is removed.
func TestRenameFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "taken")
	if err := os.MkdirAll(filepath.Join(path, "inside"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new"), Private); err == nil {
		t.Fatal("a file replaced a folder")
	}
	if got := entries(t, dir); !slices.Equal(got, []string{"taken"}) {
		t.Fatalf("the folder holds %v", got)
	}
	if got := entries(t, path); !slices.Equal(got, []string{"inside"}) {
		t.Fatalf("the folder replaced holds %v", got)
	}
}

// TestOwnerOnly: a secret replacing a file others could read is its
// owner's alone.
func TestOwnerOnly(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("the access list is ownerfile's to check (TestRestrictAllowsOnlyTheUser)")
	}
	path := filepath.Join(t.TempDir(), "relay.json")
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte(`{"token":"secret"}`), OwnerOnly); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %o, want 600", fi.Mode().Perm())
	}
}

// TestReplace moves a file written by something else into place; one in
// another folder is refused and removed, the old file kept.
func TestReplace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "history.db")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "history.db.new")
	if err := os.WriteFile(elsewhere, []byte("other"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Replace(elsewhere, path); err == nil {
		t.Fatal("a file from another folder replaced it")
	}
	wantFile(t, path, "old")
	if _, err := os.Stat(elsewhere); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused file is still there: %v", err)
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Replace(tmp, path); err != nil {
		t.Fatal(err)
	}
	wantFile(t, path, "new")
	if got := entries(t, dir); !slices.Equal(got, []string{"history.db"}) {
		t.Fatalf("the folder holds %v", got)
	}
}
