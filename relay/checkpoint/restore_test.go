package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Restores (restore.go): a file that cannot be written, objects pruned
// away, and restoring twice.

func TestPrunedObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	dir := newFolder(t)
	before, err := s.Snapshot(ctx, dir, conv)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := s.locate(ctx, dir)
	objects := filepath.Join(l.bare, "objects")
	entries, _ := os.ReadDir(objects)
	for _, e := range entries {
		if len(e.Name()) == 2 {
			if err := os.RemoveAll(filepath.Join(objects, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, _, err := s.Restore(ctx, dir, conv, before); err == nil || !strings.Contains(err.Error(), "pruned") {
		t.Fatalf("restore to a pruned snapshot: %v", err)
	}
	if got := read(t, dir, "a.txt"); got != "one\ntwo\nthree" {
		t.Fatalf("a.txt = %q: a failed restore changed the folder", got)
	}
}

// A file the restore cannot write (a folder holding an ignored file stands
// where it goes) is reported, and every other file is restored.
func TestRestoreReportsUnwritableFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	dir := newFolder(t)
	before, err := s.Snapshot(ctx, dir, conv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "sub/c.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "sub/c.txt/kept.log", "ignored, in the way")
	write(t, dir, "a.txt", "changed")
	_, restored, err := s.Restore(ctx, dir, conv, before)
	if err != nil {
		t.Fatal(err)
	}
	var failed *File
	for i := range restored {
		if restored[i].Path == "sub/c.txt" {
			failed = &restored[i]
		}
	}
	if failed == nil || failed.Status != Failed || failed.Error == "" {
		t.Fatalf("restored: %+v", restored)
	}
	if read(t, dir, "a.txt") != "one\ntwo\nthree" || read(t, dir, "sub/c.txt/kept.log") != "ignored, in the way" {
		t.Fatal("the other files were not restored, or the ignored one was touched")
	}
}

// A restore that finds the folder as the turn's checkpoint left it (the
// second of two restores to it) takes an undo checkpoint of its own: the
// restore's diff never replaces the turn's, which still answers.
func TestRestoreTwiceKeepsTheTurnsDiff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	dir := newRepo(t)
	before, err := s.Snapshot(ctx, dir, conv)
	if err != nil {
		t.Fatal(err)
	}
	change(t, dir)
	if _, err := s.SnapshotAfter(ctx, dir, conv, before); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		undo, _, err := s.Restore(ctx, dir, conv, before)
		if err != nil {
			t.Fatal(err)
		}
		if undo == before {
			t.Fatal("the restore's undo checkpoint is the turn's")
		}
	}
	patches, err := s.Diff(ctx, dir, conv, before, "", 1<<20)
	if err != nil || len(patches) != 4 || !strings.Contains(patches[0].Patch, "+four") {
		t.Fatalf("the turn's diff after two restores: %+v, %v", patches, err)
	}
}
