package checkpoint

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// What the tests build folders, repositories and stores with, and read
// them back by.

const conv = "0f8b7f3e-5d0c-4a5e-9b1e-3d2c1b0a9f8e"

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(t.TempDir())
	if err != nil {
		t.Skip(err)
	}
	return s
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(), "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return string(out)
}

func write(t *testing.T, dir, path, content string) {
	t.Helper()
	full := filepath.Join(dir, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tree is every file under dir but .git, with its content (a symlink's
// target) and mode.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		fi, _ := os.Lstat(p)
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			files[rel] = "link:" + target
			return nil
		}
		b, err := os.ReadFile(p)
		files[rel] = fmt.Sprintf("%v:%s", fi.Mode().Perm(), b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// fill gives dir a first state: a text file with no final newline, a
// binary file, a nested file, an executable, a symlink, and ignored files.
func fill(t *testing.T, dir string) {
	write(t, dir, ".gitignore", "build/\n*.log\n")
	write(t, dir, "a.txt", "one\ntwo\nthree") // no final newline
	write(t, dir, "bin.dat", "\x00\x01\x02binary\xff\xfe")
	write(t, dir, "sub/c.txt", "c\n")
	write(t, dir, "run.sh", "#!/bin/sh\necho hi\n")
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "build/out.o", "ignored")
	write(t, dir, "debug.log", "ignored log")
}

// change is what a turn does: modifies, deletes, adds, and touches
// ignored files.
func change(t *testing.T, dir string) {
	write(t, dir, "a.txt", "one\n2\nthree\nfour")
	write(t, dir, "bin.dat", "\x00\x09binary changed\xff")
	if err := os.Remove(filepath.Join(dir, "sub/c.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "new/d.txt", "d1\nd2\n")
	write(t, dir, "build/out.o", "ignored, changed")
	write(t, dir, "debug.log", "ignored log, changed")
	write(t, dir, "build/new.o", "ignored, new")
}

func newRepo(t *testing.T) string {
	dir := t.TempDir()
	run(t, dir, "init", "-q", "-b", "main")
	fill(t, dir)
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "first")
	return dir
}

func newFolder(t *testing.T) string {
	dir := t.TempDir()
	fill(t, dir)
	return dir
}

func summary(files []File) []string {
	var s []string
	for _, f := range files {
		s = append(s, fmt.Sprintf("%s %s +%d -%d binary=%v", f.Path, f.Status, f.Additions, f.Deletions, f.Binary))
	}
	return s
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func dirSize(t *testing.T, dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
