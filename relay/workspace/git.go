package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/capped"
)

// gitTimeout bounds one git command: a worktree of a big repository takes
// a while to check out, a hung one (a hook waiting on a terminal) must not
// hold a send for ever.
const gitTimeout = 2 * time.Minute

// gitCmd runs git.
type gitCmd struct {
	name string // as configured, for messages
	path string // found on PATH; "" when it was not
}

func newGit(name string) gitCmd {
	if name == "" {
		name = "git"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		path = ""
	}
	return gitCmd{name: name, path: path}
}

// gitError is a git command that failed: its arguments and what it said.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		msg = e.err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.args, " "), msg)
}

func (e *gitError) Unwrap() error { return e.err }

// exitCode is the git command's exit status (-1 when it did not exit).
func (e *gitError) exitCode() int {
	var ee *exec.ExitError
	if errors.As(e.err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// run runs git in dir and returns its standard output, trimmed. env adds
// to the relay's environment, less what would point git elsewhere.
func (g gitCmd) run(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	if g.path == "" {
		return "", refuse("a worktree needs git, and this relay cannot find %q on its PATH: install git, or work in the folder itself, without a worktree", g.name)
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.path, append([]string{"-C", dir}, args...)...)
	cmd.Env = append(gitEnv(), env...)
	var stdout bytes.Buffer
	stderr := capped.NewBuffer(4096)
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Run(); err != nil {
		return "", &gitError{args: args, stderr: stderr.String(), err: err}
	}
	return strings.TrimSpace(stdout.String()), nil
}

// gitEnv is the relay's environment for git: never a prompt on a terminal
// nobody watches, and none of the variables that would send git to
// another repository than the folder's.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR", "GIT_TERMINAL_PROMPT", "GIT_PREFIX":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GIT_TERMINAL_PROMPT=0")
}

// BranchPrefix starts the name of every branch a worktree gets.
const BranchPrefix = "pilotdesk/"

// shortID is the first 8 characters of a conversation id, made safe for a
// branch's and a folder's name.
func shortID(id string) string {
	var b strings.Builder
	for _, r := range id {
		if b.Len() >= 8 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		s = "conversation"
	}
	return s
}

// maxNames is how many names a worktree tries before it gives up.
const maxNames = 100

// makeWorktree makes the worktree of the repository dir is in, on a new
// branch from its HEAD, and returns it with Dir the same subfolder of it.
func (s *Set) makeWorktree(ctx context.Context, id, dir string) (Workspace, error) {
	if s.worktreeDir == "" {
		return Workspace{}, refuse("this relay keeps no data dir, so it makes no worktrees: work in the folder itself, without a worktree")
	}
	top, err := s.git.run(ctx, dir, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		if IsRefusal(err) {
			return Workspace{}, err
		}
		return Workspace{}, refuse("the folder %s is not inside a git repository, so it cannot have a worktree (%v): choose a folder of a repository, or work in the folder itself, without a worktree", dir, err)
	}
	if r, err := filepath.EvalSymlinks(top); err == nil {
		top = r
	}
	rel, err := filepath.Rel(top, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = "." // a folder git says is in the repository, yet is not below it: the top, then
	}
	base, err := s.git.run(ctx, top, nil, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil || base == "" {
		return Workspace{}, refuse("the repository %s has no commit yet, so a worktree has nothing to start from: make a first commit, or work in the folder itself, without a worktree", top)
	}
	if err := os.MkdirAll(s.worktreeDir, 0o755); err != nil {
		return Workspace{}, fmt.Errorf("make the worktrees' folder: %w", err)
	}
	short := shortID(id)
	for i := 1; i <= maxNames; i++ {
		branch, folder := BranchPrefix+short, filepath.Join(s.worktreeDir, filepath.Base(top)+"-"+short)
		if i > 1 {
			branch += "-" + strconv.Itoa(i)
			folder += "-" + strconv.Itoa(i)
		}
		if _, err := os.Lstat(folder); err == nil {
			continue // a worktree (or anything) is there: never overwrite
		}
		if _, err := s.git.run(ctx, top, nil, "show-ref", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
			continue // the branch exists: it is someone's work
		} else if ge := (*gitError)(nil); !errors.As(err, &ge) || ge.exitCode() != 1 {
			return Workspace{}, fmt.Errorf("could not tell whether the branch %s exists: %w", branch, err)
		}
		if _, err := s.git.run(ctx, top, nil, "worktree", "add", "--quiet", "-b", branch, folder, base); err != nil {
			return Workspace{}, fmt.Errorf("could not make the worktree of %s: %w", top, err)
		}
		w := Workspace{Isolation: Worktree, Dir: filepath.Join(folder, rel), Branch: branch, Base: base, Root: folder}
		// The subfolder may hold nothing git tracks, and so be missing.
		if err := os.MkdirAll(w.Dir, 0o755); err != nil {
			return Workspace{}, fmt.Errorf("make the folder %s in the worktree: %w", w.Dir, err)
		}
		return w, nil
	}
	return Workspace{}, fmt.Errorf("no free name for a worktree: the branches %s%s to %s%s-%d are all taken", BranchPrefix, short, BranchPrefix, short, maxNames)
}

// Release is what deleting a conversation does to its workspace: a
// worktree's changes, whatever they are, are committed on its branch
// (message: the conversation's title) and its folder is removed; the
// branch stays, so no work is lost. A folder that is not a worktree is
// left as it is. A worktree whose commit fails is left in place (and the
// error says where), never removed with work in it.
func (s *Set) Release(ctx context.Context, w Workspace, title string) error {
	if w.Isolation != Worktree || w.Root == "" {
		return nil
	}
	if _, err := os.Stat(w.Root); errors.Is(err, os.ErrNotExist) {
		return nil // removed already
	}
	if err := s.commitAll(ctx, w.Root, title); err != nil {
		return fmt.Errorf("the worktree %s is left as it is: its changes could not be committed on %s: %w", w.Root, w.Branch, err)
	}
	if _, err := s.git.run(ctx, w.Root, nil, "worktree", "remove", "--force", w.Root); err != nil {
		return fmt.Errorf("the work is committed on %s, but the worktree %s could not be removed: %w", w.Branch, w.Root, err)
	}
	return nil
}

// HasIgnored reports whether the worktree w holds files its .gitignore
// ignores (.env, build output): the commit of a delete leaves them out and
// the removal of its folder takes them, so the delete's confirmation says
// so. Only whether there is one is read: git stops at the first (an
// ignored folder is one entry, not walked), its output is not kept. A
// folder that is not a worktree has none to lose: false.
func (s *Set) HasIgnored(ctx context.Context, w Workspace) (bool, error) {
	if w.Isolation != Worktree || w.Root == "" || s.git.path == "" {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	args := []string{"-C", w.Root, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory", "--no-empty-directory"}
	cmd := exec.CommandContext(ctx, s.git.path, args...)
	cmd.Env = gitEnv()
	stderr := capped.NewBuffer(4096)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return false, err
	}
	if err := cmd.Start(); err != nil {
		return false, &gitError{args: args[2:], err: err}
	}
	var first [1]byte
	n, _ := out.Read(first[:])
	if n > 0 {
		cancel() // one is enough: the rest is not read
		_ = cmd.Wait()
		return true, nil
	}
	if err := cmd.Wait(); err != nil {
		return false, &gitError{args: args[2:], stderr: stderr.String(), err: err}
	}
	return false, nil
}

// commitAll commits everything the worktree at root holds that its branch
// does not: new, changed and removed files (less what .gitignore
// ignores). Hooks do not run and nothing is signed: the commit only keeps
// the work, the user reviews it when merging.
func (s *Set) commitAll(ctx context.Context, root, message string) error {
	if _, err := s.git.run(ctx, root, nil, "add", "--all"); err != nil {
		return err
	}
	if _, err := s.git.run(ctx, root, nil, "diff", "--cached", "--quiet"); err == nil {
		return nil // nothing to commit
	}
	if strings.TrimSpace(message) == "" {
		message = "pilotdesk conversation"
	}
	var env []string
	// A user without an identity in git's configuration still gets the
	// work kept; git's own identity wins when there is one.
	if name, _ := s.git.run(ctx, root, nil, "config", "user.name"); name == "" {
		env = append(env, "GIT_AUTHOR_NAME=pilotdesk", "GIT_COMMITTER_NAME=pilotdesk")
	}
	if email, _ := s.git.run(ctx, root, nil, "config", "user.email"); email == "" {
		env = append(env, "GIT_AUTHOR_EMAIL=pilotdesk@localhost", "GIT_COMMITTER_EMAIL=pilotdesk@localhost")
	}
	_, err := s.git.run(ctx, root, env, "-c", "commit.gpgsign=false", "commit", "--quiet", "--no-verify", "-m", message)
	return err
}

// GitInfo says whether dir is inside a git repository and the branch its
// checkout is on ("" when detached), by reading the repository's HEAD:
// no process runs, so a list of folders costs a few file reads each.
func GitInfo(dir string) (git bool, branch string) {
	for d := filepath.Clean(dir); ; {
		dotGit := filepath.Join(d, ".git")
		if fi, err := os.Stat(dotGit); err == nil {
			gitDir := dotGit
			if !fi.IsDir() { // a worktree's or a submodule's: "gitdir: PATH"
				b, err := os.ReadFile(dotGit)
				if err != nil {
					return false, ""
				}
				p, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
				if !ok {
					return false, ""
				}
				gitDir = strings.TrimSpace(p)
				if !filepath.IsAbs(gitDir) {
					gitDir = filepath.Join(d, gitDir)
				}
			}
			head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
			if err != nil {
				return true, ""
			}
			ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: refs/heads/")
			if !ok {
				return true, ""
			}
			return true, ref
		}
		parent := filepath.Dir(d)
		if parent == d {
			return false, ""
		}
		d = parent
	}
}
