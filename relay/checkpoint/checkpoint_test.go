package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestChangesAndRoundTrip(t *testing.T) {
	t.Parallel()
	for name, mk := range map[string]func(*testing.T) string{"repository": newRepo, "plain folder": newFolder} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newStore(t)
			dir := mk(t)
			before, err := s.Snapshot(ctx, dir, conv)
			if err != nil {
				t.Fatal(err)
			}
			first := tree(t, dir)
			change(t, dir)
			after, err := s.SnapshotAfter(ctx, dir, conv, before)
			if err != nil {
				t.Fatal(err)
			}
			second := tree(t, dir)

			files, truncated, err := s.Changes(ctx, dir, conv, before, after)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{
				"a.txt modified +3 -2 binary=false",
				"bin.dat modified +0 -0 binary=true",
				"new/d.txt added +2 -0 binary=false",
				"sub/c.txt deleted +0 -1 binary=false",
			}
			if got := summary(files); !slices.Equal(got, want) || truncated {
				t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if _, err := os.Stat(filepath.Join(dir, ".git")); name == "plain folder" && err == nil {
				t.Fatal("the plain folder got a .git")
			}

			patches, err := s.Diff(ctx, dir, conv, before, "", 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if len(patches) != 4 || !strings.Contains(patches[0].Patch, "+four") || !strings.Contains(patches[0].Patch, "\\ No newline at end of file") ||
				!strings.Contains(patches[1].Patch, "Binary files") || !strings.Contains(patches[3].Patch, "-c") {
				t.Fatalf("patches: %+v", patches)
			}
			one, err := s.Diff(ctx, dir, conv, before, "new/d.txt", 1<<20)
			if err != nil || len(one) != 1 || !strings.Contains(one[0].Patch, "+d2") {
				t.Fatalf("diff of one file: %+v, %v", one, err)
			}
			cut, err := s.Diff(ctx, dir, conv, before, "", 100)
			if err != nil || !cut[len(cut)-1].Truncated || len(cut[0].Patch)+len(cut[1].Patch)+len(cut[2].Patch)+len(cut[3].Patch) > 100 {
				t.Fatalf("cut diff: %+v, %v", cut, err)
			}

			undo, restored, err := s.Restore(ctx, dir, conv, before)
			if err != nil {
				t.Fatal(err)
			}
			wantRestored := []string{
				"a.txt modified +2 -3 binary=false",
				"bin.dat modified +0 -0 binary=true",
				"new/d.txt deleted +0 -2 binary=false",
				"sub/c.txt added +1 -0 binary=false",
			}
			if got := summary(restored); !slices.Equal(got, wantRestored) {
				t.Fatalf("restored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantRestored, "\n"))
			}
			now := tree(t, dir)
			for _, ignored := range []string{"build/out.o", "debug.log", "build/new.o"} {
				if now[ignored] != second[ignored] {
					t.Fatalf("the restore touched the ignored %s: %q", ignored, now[ignored])
				}
				delete(now, ignored)
				delete(first, ignored)
			}
			if !mapsEqual(now, first) {
				t.Fatalf("after the restore:\n%v\nwant:\n%v", now, first)
			}

			// The undo checkpoint's diff is what the restore did.
			undoPatches, err := s.Diff(ctx, dir, conv, undo, "", 1<<20)
			if err != nil {
				t.Fatalf("diff of the undo checkpoint: %v", err)
			}
			var did, restoredFiles []string
			for _, p := range undoPatches {
				did = append(did, p.Path+" "+p.Status)
			}
			for _, f := range restored {
				restoredFiles = append(restoredFiles, f.Path+" "+f.Status)
			}
			if !slices.Equal(did, restoredFiles) || !strings.Contains(undoPatches[0].Patch, "-four") {
				t.Fatalf("diff of the undo checkpoint: %+v, want the restore's %v", undoPatches, restoredFiles)
			}

			if _, _, err := s.Restore(ctx, dir, conv, undo); err != nil {
				t.Fatal(err)
			}
			if now := tree(t, dir); !mapsEqual(now, second) {
				t.Fatalf("after the undo:\n%v\nwant:\n%v", now, second)
			}
		})
	}
}

func TestUnknownAndForeignCheckpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	dir := newFolder(t)
	other, err := s.Snapshot(ctx, dir, "another-conversation")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{other, strings.Repeat("a", 40), "HEAD", "../../x"} {
		if _, _, err := s.Restore(ctx, dir, conv, id); !errors.Is(err, ErrUnknown) {
			t.Errorf("restore to %q: %v, want ErrUnknown", id, err)
		}
		if _, err := s.Diff(ctx, dir, conv, id, "", 1000); !errors.Is(err, ErrUnknown) {
			t.Errorf("diff of %q: %v, want ErrUnknown", id, err)
		}
	}
	// A snapshot of this conversation where no turn began.
	mine, err := s.Snapshot(ctx, dir, conv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Diff(ctx, dir, conv, mine, "", 1000); !errors.Is(err, ErrUnknown) {
		t.Errorf("diff of a checkpoint no turn began at: %v", err)
	}
}

func TestGitFailureSaysWhy(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	fake := filepath.Join(t.TempDir(), "git")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'fatal: the disk is on fire' >&2\nexit 128\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.git = fake
	_, err := s.Snapshot(context.Background(), newFolder(t), conv)
	if err == nil || !strings.Contains(err.Error(), "the disk is on fire") {
		t.Fatalf("snapshot with a failing git: %v", err)
	}
}

func TestWithoutGit(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := New(t.TempDir()); err == nil || !strings.Contains(err.Error(), "checkpoints are off") {
		t.Fatalf("New without git: %v", err)
	}
}

func TestChangesCapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	dir := t.TempDir()
	before, err := s.Snapshot(ctx, dir, conv)
	if err != nil {
		t.Fatal(err)
	}
	for i := range MaxFiles + 5 {
		write(t, dir, fmt.Sprintf("f%04d", i), "x\n")
	}
	after, err := s.SnapshotAfter(ctx, dir, conv, before)
	if err != nil {
		t.Fatal(err)
	}
	files, truncated, err := s.Changes(ctx, dir, conv, before, after)
	if err != nil || len(files) != MaxFiles || !truncated {
		t.Fatalf("%d files, truncated %v, %v", len(files), truncated, err)
	}
}
