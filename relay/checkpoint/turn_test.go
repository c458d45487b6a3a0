package checkpoint

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// logGit makes s run git through a script that notes each command's
// arguments in a log, and returns a function that reads the commands
// noted since its last call.
func logGit(t *testing.T, s *Store) func() []string {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	script := "#!/bin/sh\necho \"$*\" >> '" + log + "'\nexec '" + s.git + "' \"$@\"\n"
	wrapper := filepath.Join(dir, "git")
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s.git = wrapper
	seen := 0
	return func() []string {
		b, _ := os.ReadFile(log)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(b) == 0 {
			lines = nil
		}
		out := lines[seen:]
		seen = len(lines)
		return out
	}
}

// ran says whether one of cmds is the git command sub.
func ran(cmds []string, sub string) bool {
	return slices.ContainsFunc(cmds, func(c string) bool { return slices.Contains(strings.Fields(c), sub) })
}

// TestSnapshotTurnUnchanged: a turn that changed nothing in its folder
// gets its checkpoint and no changes without comparing the snapshots with
// git (no diff-tree, no message read), and its checkpoint is still the
// turn's (After finds it); a turn that changed files gets what Changes
// says, compared by git as before.
func TestSnapshotTurnUnchanged(t *testing.T) {
	t.Parallel()
	for name, mk := range map[string]func(*testing.T) string{"repository": newRepo, "plain folder": newFolder} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newStore(t)
			cmds := logGit(t, s)
			dir := mk(t)

			before, err := s.Snapshot(ctx, dir, conv)
			if err != nil {
				t.Fatal(err)
			}
			cmds()
			after, files, truncated, err := s.SnapshotTurn(ctx, dir, conv, before)
			if err != nil {
				t.Fatal(err)
			}
			turn := cmds()
			if len(files) != 0 || truncated || after == "" || after == before {
				t.Fatalf("an unchanged turn: after %q (before %q), files %v, truncated %v", after, before, summary(files), truncated)
			}
			if ran(turn, "diff-tree") || slices.ContainsFunc(turn, func(c string) bool { return strings.Contains(c, "cat-file commit") }) {
				t.Fatalf("an unchanged turn compared its snapshots with git:\n%s", strings.Join(turn, "\n"))
			}
			if got, err := s.After(ctx, dir, conv, before); err != nil || got != after {
				t.Fatalf("After(%s) = %q, %v; want the turn's checkpoint %q", before, got, err, after)
			}
			if files, _, err := s.Changes(ctx, dir, conv, before, after); err != nil || len(files) != 0 {
				t.Fatalf("Changes of the unchanged turn: %v, %v", summary(files), err)
			}

			// A turn that edits: the same answer as Changes, from git.
			before, err = s.Snapshot(ctx, dir, conv)
			if err != nil {
				t.Fatal(err)
			}
			change(t, dir)
			cmds()
			after, files, _, err = s.SnapshotTurn(ctx, dir, conv, before)
			if err != nil {
				t.Fatal(err)
			}
			if !ran(cmds(), "diff-tree") {
				t.Fatal("a turn that changed files was not compared with git")
			}
			want, _, err := s.Changes(ctx, dir, conv, before, after)
			if err != nil || len(want) == 0 || !slices.Equal(summary(files), summary(want)) {
				t.Fatalf("the edited turn's changes: %v; Changes says %v (%v)", summary(files), summary(want), err)
			}
		})
	}
}

// TestSnapshotTurnLargeFileTouched: a file over MaxFile is in no tree, so
// a turn that rewrote only it leaves the tree as it was; its change is
// still reported (the snapshots' messages differ).
func TestSnapshotTurnLargeFileTouched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	dir := newFolder(t)
	big := bytes.Repeat([]byte("x"), MaxFile+1)
	write(t, dir, "big.bin", string(big))
	before, err := s.Snapshot(ctx, dir, conv)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "big.bin", string(big)+"more")
	// The size changed; the mtime may not have, on a coarse clock.
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(dir, "big.bin"), later, later); err != nil {
		t.Fatal(err)
	}
	_, files, _, err := s.SnapshotTurn(ctx, dir, conv, before)
	if want := []string{"big.bin modified +0 -0 binary=true"}; err != nil || !slices.Equal(summary(files), want) {
		t.Fatalf("changes: %v, %v; want %v", summary(files), err, want)
	}
}
