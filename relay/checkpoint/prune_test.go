package checkpoint

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Removing checkpoints: a deleted conversation's refs, a repository
// removed whole, and Prune keeping live and other stores' conversations.

func TestDeleteRemovesRefs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	repo, folder := newRepo(t), newFolder(t)
	for _, dir := range []string{repo, folder} {
		before, err := s.Snapshot(ctx, dir, conv)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SnapshotAfter(ctx, dir, conv, before); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := s.Snapshot(ctx, repo, "another")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := s.locate(ctx, folder)
	for _, dir := range []string{repo, folder} {
		if err := s.Delete(ctx, dir, conv); err != nil {
			t.Fatal(err)
		}
	}
	if refs := run(t, repo, "for-each-ref", "--format=%(refname)", "refs/pilotdesk/"); strings.TrimSpace(refs) != "refs/pilotdesk/another/"+kept {
		t.Fatalf("refs left: %q", refs)
	}
	if _, err := os.Stat(l.bare); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the bare repository of a folder with no checkpoint left is still there: %v", err)
	}
	// The folder's next snapshot starts a repository anew.
	if _, err := s.Snapshot(ctx, folder, conv); err != nil {
		t.Fatal(err)
	}
}

// A bare repository is renamed out of the way before it is removed, so
// nothing finds it half removed (a glob of repos/*.git during the removal
// found a folder git no longer took for a repository); what a crash left
// renamed goes at the next start.
func TestRepositoryRemovedWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data := t.TempDir()
	left := filepath.Join(data, "checkpoints", "repos", "0123.git"+removingSuffix)
	if err := os.MkdirAll(filepath.Join(left, "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := New(data)
	if err != nil {
		t.Skip(err)
	}
	if _, err := os.Stat(left); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("what a cut-short removal left is still there: %v", err)
	}
	folder := newFolder(t)
	if _, err := s.Snapshot(ctx, folder, conv); err != nil {
		t.Fatal(err)
	}
	l, _ := s.locate(ctx, folder)
	if err := s.Delete(ctx, folder, conv); err != nil {
		t.Fatal(err)
	}
	all, _ := filepath.Glob(filepath.Join(data, "checkpoints", "repos", "*"))
	if len(all) != 0 || l.bare == "" {
		t.Fatalf("left in repos after the last conversation's delete: %v (bare %q)", all, l.bare)
	}
}

// Prune deletes the refs of the conversations it is not told to keep, in
// every folder the store snapshotted.
func TestPruneKeepsOnlyLiveConversations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	repo, folder := newRepo(t), newFolder(t)
	for _, dir := range []string{repo, folder} {
		for _, c := range []string{"live", "gone"} {
			if _, err := s.Snapshot(ctx, dir, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Another store on the same data dir: a relay started again.
	again, err := New(filepath.Dir(s.data))
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Prune(ctx, func(c string) bool { return c == RefName("live") }); err != nil {
		t.Fatal(err)
	}
	if refs := run(t, repo, "for-each-ref", "--format=%(refname)", "refs/pilotdesk/"); strings.Contains(refs, "gone") || !strings.Contains(refs, "live") {
		t.Fatalf("refs after the prune: %s", refs)
	}
	l, _ := again.locate(ctx, folder)
	if refs := run(t, folder, "--git-dir="+l.bare, "for-each-ref", "--format=%(refname)", "refs/pilotdesk/"); strings.Contains(refs, "gone") || !strings.Contains(refs, "live") {
		t.Fatalf("refs of the plain folder after the prune: %s", refs)
	}
}

// Prune leaves alone the refs of conversations another store took: two
// relays (two data dirs) working in folders of one repository, or of two
// worktrees of it, share its refs/pilotdesk/, and one starting again must
// not delete the other's live snapshots (the other's turn then ended with
// "its changes are not recorded": not a checkpoint of this conversation).
func TestPruneLeavesAnotherStoresConversations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t)
	s, other := newStore(t), newStore(t)
	for _, c := range []string{"live", "gone"} {
		if _, err := s.Snapshot(ctx, repo, c); err != nil {
			t.Fatal(err)
		}
	}
	theirs, err := other.Snapshot(ctx, repo, "theirs")
	if err != nil {
		t.Fatal(err)
	}
	again, err := New(filepath.Dir(s.data))
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Prune(ctx, func(c string) bool { return c == RefName("live") }); err != nil {
		t.Fatal(err)
	}
	if refs := run(t, repo, "for-each-ref", "--format=%(refname)", "refs/pilotdesk/"); strings.Contains(refs, "gone") || !strings.Contains(refs, "live") || !strings.Contains(refs, "theirs") {
		t.Fatalf("refs after the prune: %s", refs)
	}
	change(t, repo)
	if _, err := other.SnapshotAfter(ctx, repo, "theirs", theirs); err != nil {
		t.Fatalf("the other store's turn after the prune: %v", err)
	}
	// A second start finds nothing more of its own to delete.
	if err := again.Prune(ctx, func(c string) bool { return c == RefName("live") }); err != nil {
		t.Fatal(err)
	}
	if refs := run(t, repo, "for-each-ref", "--format=%(refname)", "refs/pilotdesk/"); !strings.Contains(refs, "live") || !strings.Contains(refs, "theirs") {
		t.Fatalf("refs after a second prune: %s", refs)
	}
}

// Prune finds the folders whose names hold a space: the folders file is
// read a line a folder, where it was split at every space and Prune
// looked for "…/my" and "project", so the refs of a conversation deleted
// while the relay was not running stayed there for good.
func TestPruneFindsFoldersWithSpaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	repo := filepath.Join(newRepo(t), "my project")
	folder := filepath.Join(newFolder(t), "my  notes")
	for _, dir := range []string{repo, folder} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, dir, "a.txt", "a\n")
		if _, err := s.Snapshot(ctx, dir, "gone"); err != nil {
			t.Fatal(err)
		}
	}
	l, _ := s.locate(ctx, folder)
	again, err := New(filepath.Dir(s.data))
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Prune(ctx, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if refs := run(t, repo, "for-each-ref", "--format=%(refname)", "refs/pilotdesk/"); refs != "" {
		t.Fatalf("refs after the prune: %s", refs)
	}
	if _, err := os.Stat(l.bare); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the plain folder's bare repository is still there: %v", err)
	}
}

// TestForgetAfterRestart: a worktree snapshotted by a store that has
// since stopped (a relay restarted after the worktree's last snapshot) is
// forgotten whole once it is removed, its private index too: a store
// knew the index only of a folder it had located since it started, and a
// removed worktree can no longer tell git which it was, so it was left
// in the data dir for good, as large as the repository's index.
func TestForgetAfterRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	run(t, repo, "worktree", "add", "-q", "-b", "pilotdesk/x", wt)
	data := t.TempDir()
	first, err := New(data)
	if err != nil {
		t.Skip(err)
	}
	write(t, wt, "new.txt", "new\n")
	if _, err := first.Snapshot(ctx, wt, conv); err != nil {
		t.Fatal(err)
	}
	indexes := filepath.Join(data, "checkpoints", "index", "*")
	if left, _ := filepath.Glob(indexes); len(left) == 0 {
		t.Fatal("the snapshot kept no private index")
	}
	again, err := New(data) // the relay restarted
	if err != nil {
		t.Fatal(err)
	}
	run(t, repo, "worktree", "remove", "--force", wt)
	if err := again.Forget(wt); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(indexes); len(left) != 0 {
		t.Fatalf("the removed worktree's index is still in the data dir: %v", left)
	}
}
