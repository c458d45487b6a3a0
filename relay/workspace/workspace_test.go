package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo makes a git repository with one commit (a file f.txt holding
// "one\n") in a new folder, and returns its path.
func repo(t *testing.T, parent string) string {
	t.Helper()
	dir := filepath.Join(parent, "repo")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "init", "--quiet", "--initial-branch=main")
	write(t, filepath.Join(dir, "f.txt"), "one\n")
	write(t, filepath.Join(dir, "sub", "g.txt"), "sub\n")
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "first")
	return dir
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(gitEnv(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func newSet(t *testing.T, roots ...string) (*Set, string) {
	t.Helper()
	data := t.TempDir()
	s, err := New(Options{Roots: roots, Default: roots[0], WorktreeDir: filepath.Join(data, "worktrees")})
	if err != nil {
		t.Fatal(err)
	}
	return s, data
}

func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// Every folder a send may not use is refused with a sentence that names
// the roots, and nothing is made.
func TestCheckRefusals(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	s, _ := newSet(t, root)
	write(t, filepath.Join(root, "file"), "x")
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, says string }{
		{"relative/dir", "not an absolute path"},
		{filepath.Join(root, "missing"), "does not exist"},
		{filepath.Join(root, "file"), "is a file, not a folder"},
		{outside, "outside the folders"},
		{filepath.Join(root, "..", filepath.Base(outside)), "outside the folders"},
		{filepath.Join(root, "out"), "it leads to " + outside},
	} {
		_, err := s.Check(tc.path)
		if !IsRefusal(err) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), root) {
			t.Errorf("Check(%q) = %v; want a refusal saying %q and naming the root", tc.path, err, tc.says)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "in"), filepath.Join(outside, "back")); err != nil {
		t.Fatal(err)
	}
	// A path outside that leads inside is where it leads: inside.
	for _, p := range []string{root, filepath.Join(root, "in"), filepath.Join(root, "in", "..", "in"), filepath.Join(outside, "back")} {
		if dir, err := s.Check(p); err != nil || dir != filepath.Join(root, "in") && dir != root {
			t.Errorf("Check(%q) = %q, %v", p, dir, err)
		}
	}
}

// A worktree is made on pilotdesk/<first 8 of the id> from HEAD, in the
// same subfolder; the user's checkout, index and branch are untouched; a
// taken branch name gets the next free one; release commits what the
// worktree holds and removes its folder, and the branch keeps the work.
func TestWorktree(t *testing.T) {
	t.Parallel()
	requireGit(t)
	home := t.TempDir()
	user := repo(t, home)
	s, data := newSet(t, home)
	head := gitIn(t, user, "rev-parse", "HEAD")
	gitIn(t, user, "branch", "pilotdesk/abcdef12") // someone's branch of that name

	ctx := context.Background()
	w, err := s.Fix(ctx, "abcdef12-3456", filepath.Join(user, "sub"), Worktree)
	if err != nil {
		t.Fatal(err)
	}
	if w.Branch != "pilotdesk/abcdef12-2" || w.Base != head || w.Path != filepath.Join(user, "sub") ||
		!strings.HasPrefix(w.Root, filepath.Join(data, "worktrees")) || w.Dir != filepath.Join(w.Root, "sub") {
		t.Fatalf("worktree %+v", w)
	}
	if got := read(t, filepath.Join(w.Dir, "g.txt")); got != "sub\n" {
		t.Fatalf("the worktree's sub/g.txt holds %q", got)
	}
	write(t, filepath.Join(w.Root, "f.txt"), "changed by the agent\n")
	write(t, filepath.Join(w.Dir, "new.txt"), "new\n")

	// The user's checkout is as it was.
	if st := gitIn(t, user, "status", "--porcelain"); st != "" {
		t.Fatalf("the user's checkout changed: %q", st)
	}
	if b := gitIn(t, user, "branch", "--show-current"); b != "main" {
		t.Fatalf("the user's branch is %q", b)
	}
	if got := read(t, filepath.Join(user, "f.txt")); got != "one\n" {
		t.Fatalf("the user's f.txt holds %q", got)
	}
	if git, branch := GitInfo(w.Dir); !git || branch != w.Branch {
		t.Errorf("GitInfo(worktree) = %v, %q", git, branch)
	}
	if git, branch := GitInfo(filepath.Join(user, "sub")); !git || branch != "main" {
		t.Errorf("GitInfo(user's sub) = %v, %q", git, branch)
	}

	// Changed and new files are not ignored ones; a file .gitignore
	// ignores is, which the delete's commit leaves out (HasIgnored).
	if has, err := s.HasIgnored(ctx, w); err != nil || has {
		t.Fatalf("HasIgnored with no ignored file = %v, %v", has, err)
	}
	write(t, filepath.Join(w.Root, ".gitignore"), "*.log\n")
	if err := os.MkdirAll(filepath.Join(w.Dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.Dir, "out", "build.log"), "built\n")
	if has, err := s.HasIgnored(ctx, w); err != nil || !has {
		t.Fatalf("HasIgnored with out/build.log = %v, %v", has, err)
	}
	if has, err := s.HasIgnored(ctx, Workspace{Path: user, Isolation: None, Dir: user}); err != nil || has {
		t.Fatalf("HasIgnored of the folder itself = %v, %v", has, err)
	}

	if err := s.Release(ctx, w, "Edit f.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.Root); !os.IsNotExist(err) {
		t.Fatalf("the worktree's folder is still there: %v", err)
	}
	if msg := gitIn(t, user, "log", "-1", "--format=%s", w.Branch); msg != "Edit f.txt" {
		t.Errorf("the branch's last commit is %q", msg)
	}
	if got := gitIn(t, user, "show", w.Branch+":f.txt"); got != "changed by the agent" {
		t.Errorf("the branch's f.txt: %q", got)
	}
	if got := gitIn(t, user, "show", w.Branch+":sub/new.txt"); got != "new" {
		t.Errorf("the branch's sub/new.txt: %q", got)
	}
	if gitIn(t, user, "rev-parse", "main") != head || gitIn(t, user, "rev-parse", "pilotdesk/abcdef12") != head {
		t.Error("the user's branches moved")
	}
	if st := gitIn(t, user, "status", "--porcelain"); st != "" {
		t.Fatalf("the user's checkout changed: %q", st)
	}
}

// theFolderItself ends a worktree's refusal: what to do instead, in the
// words of the window's checkbox and the terminal's --worktree, where it
// said (isolation "none"), the protocol's field, which neither shows.
const theFolderItself = "work in the folder itself, without a worktree"

// No repository, a repository with no commit, no git, no data dir: each
// is refused with a sentence, and nothing is made.
func TestWorktreeRefusals(t *testing.T) {
	t.Parallel()
	requireGit(t)
	home := t.TempDir()
	plain := filepath.Join(home, "plain")
	empty := filepath.Join(home, "empty")
	for _, d := range []string{plain, empty} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, empty, "init", "--quiet")
	s, data := newSet(t, home)
	ctx := context.Background()
	for _, tc := range []struct{ path, says string }{
		{plain, "not inside a git repository"},
		{empty, "has no commit yet"},
	} {
		if _, err := s.Fix(ctx, "c1", tc.path, Worktree); !IsRefusal(err) || !strings.Contains(err.Error(), tc.says) || !strings.HasSuffix(err.Error(), theFolderItself) {
			t.Errorf("Fix(%s) = %v; want a refusal saying %q and ending %q", tc.path, err, tc.says, theFolderItself)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(data, "worktrees")); len(entries) != 0 {
		t.Errorf("a refused worktree left %d entries", len(entries))
	}

	user := repo(t, home)
	noGit, err := New(Options{Roots: []string{home}, Default: home, WorktreeDir: filepath.Join(data, "w2"), Git: "no-such-git-here"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noGit.Fix(ctx, "c1", user, Worktree); !IsRefusal(err) || !strings.Contains(err.Error(), "cannot find") || !strings.HasSuffix(err.Error(), theFolderItself) {
		t.Errorf("without git: %v", err)
	}
	if w, err := noGit.Fix(ctx, "c1", user, None); err != nil || w.Dir != user {
		t.Errorf("without git a plain folder still works: %+v, %v", w, err)
	}
	noData, err := New(Options{Roots: []string{home}, Default: home})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noData.Fix(ctx, "c1", user, Worktree); !IsRefusal(err) || !strings.Contains(err.Error(), "no data dir") || !strings.HasSuffix(err.Error(), theFolderItself) {
		t.Errorf("without a data dir: %v", err)
	}
}

// The default folder is used when the send names none, and is allowed
// even outside the roots (the operator chose it).
func TestDefault(t *testing.T) {
	t.Parallel()
	root, def := t.TempDir(), t.TempDir()
	s, err := New(Options{Roots: []string{root}, Default: def})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Fix(context.Background(), "c1", "", "")
	if err != nil || w.Path != def || w.Dir != def || w.Isolation != None {
		t.Fatalf("default: %+v, %v", w, err)
	}
	if got := s.Roots(); len(got) != 1 || got[0] != root {
		t.Errorf("roots %q", got)
	}
	if _, err := New(Options{Roots: []string{filepath.Join(root, "nope")}, Default: def}); err == nil {
		t.Error("a root that does not exist is accepted")
	}
}
