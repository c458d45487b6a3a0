// Package workspace decides where a conversation's agent works
// (docs/workspaces.md): a folder inside the relay's roots, checked after
// its symlinks and ".." are resolved, or a git worktree of the folder's
// repository on a branch of its own, made under the relay's data dir.
//
// Git is the git command found on PATH, the implementation every
// developer has: its worktrees, branches and commits are the ones the
// user's own tools see. Nothing here touches the user's checkout, index,
// stash or branches: a worktree gets a new branch, and a commit in it
// moves only that branch.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Isolations of a workspace, as the protocol names them.
const (
	None     = "none"
	Worktree = "worktree"
)

// Workspace is a conversation's workspace once fixed: Path as the user
// chose it, Dir where the agent runs (the folder itself, resolved, or the
// same subfolder of a worktree), and for a worktree its Branch, Base (the
// commit it started from) and Root (the worktree's top folder).
type Workspace struct {
	Path      string
	Isolation string
	Dir       string
	Branch    string
	Base      string
	Root      string
}

// Refusal is a workspace a relay will not use, with the sentence that says
// why and what to do instead. It changes nothing.
type Refusal struct{ msg string }

func (e *Refusal) Error() string { return e.msg }

func refuse(format string, args ...any) error {
	return &Refusal{msg: fmt.Sprintf(format, args...)}
}

// IsRefusal reports whether err is a Refusal (the request's fault, not
// the relay's).
func IsRefusal(err error) bool {
	var r *Refusal
	return errors.As(err, &r)
}

// Options configure a Set.
type Options struct {
	// Roots are the folders inside which a conversation may choose its
	// workspace; none: the default folder alone.
	Roots []string
	// Default is the folder of a conversation whose first send names
	// none; "": the current directory.
	Default string
	// WorktreeDir is where worktrees are made; "": no worktrees (a relay
	// that keeps no data dir).
	WorktreeDir string
	// Git is the git command; "": "git" on PATH.
	Git string
}

// Set is a relay's workspaces: its roots, its default folder, where its
// worktrees go. Its methods are safe for concurrent use.
type Set struct {
	roots       []string // resolved, absolute
	defPath     string   // the default folder as given (absolute)
	defDir      string   // resolved
	worktreeDir string
	git         gitCmd
}

// New checks the roots and the default folder: each must be a folder that
// exists. A relative one is taken from the current directory.
func New(o Options) (*Set, error) {
	def := o.Default
	if def == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("workspace: the current directory: %w", err)
		}
		def = wd
	}
	defAbs, defDir, err := resolveDir(def)
	if err != nil {
		return nil, fmt.Errorf("the default folder (--workdir): %w", err)
	}
	s := &Set{defPath: defAbs, defDir: defDir, worktreeDir: o.WorktreeDir, git: newGit(o.Git)}
	for _, r := range o.Roots {
		_, dir, err := resolveDir(r)
		if err != nil {
			return nil, fmt.Errorf("the workspace root (--workspace-root): %w", err)
		}
		s.roots = append(s.roots, dir)
	}
	if len(s.roots) == 0 {
		s.roots = []string{defDir}
	}
	if s.worktreeDir != "" {
		abs, err := filepath.Abs(s.worktreeDir)
		if err != nil {
			return nil, fmt.Errorf("workspace: the worktrees' folder: %w", err)
		}
		s.worktreeDir = abs
	}
	return s, nil
}

// resolveDir returns dir made absolute, and resolved (symlinks, ".."),
// or an error when it is no folder.
func resolveDir(dir string) (abs, resolved string, err error) {
	abs, err = filepath.Abs(dir)
	if err != nil {
		return "", "", fmt.Errorf("%q: %w", dir, err)
	}
	resolved, err = filepath.EvalSymlinks(abs)
	if err != nil {
		return "", "", fmt.Errorf("%q does not exist or cannot be read: %w", dir, err)
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return "", "", fmt.Errorf("%q: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", "", fmt.Errorf("%q is a file, not a folder", dir)
	}
	return abs, resolved, nil
}

// Roots lists the folders inside which a conversation may work.
func (s *Set) Roots() []string { return append([]string(nil), s.roots...) }

// Default is the default folder, as given.
func (s *Set) Default() string { return s.defPath }

// rootsText names the roots for a sentence.
func (s *Set) rootsText() string {
	if len(s.roots) == 1 {
		return "the folder " + s.roots[0]
	}
	return "the folders " + strings.Join(s.roots, ", ")
}

// inside reports whether dir (resolved) is one of the roots or inside one.
func (s *Set) inside(dir string) bool {
	if dir == s.defDir {
		return true // the default folder is the operator's own choice
	}
	for _, r := range s.roots {
		if dir == r {
			return true
		}
		if rel, err := filepath.Rel(r, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

// Fix decides the workspace of conversation id from what its first send
// asked (path "" and isolation "": the default folder). A worktree is
// made now. An error is a Refusal, or git's failure; either way nothing
// was made.
func (s *Set) Fix(ctx context.Context, id, path, isolation string) (Workspace, error) {
	if isolation == "" {
		isolation = None
	}
	if isolation != None && isolation != Worktree {
		return Workspace{}, refuse("the workspace's isolation must be %q or %q, not %q", None, Worktree, isolation)
	}
	if path == "" {
		path = s.defPath
	}
	dir, err := s.Check(path)
	if err != nil {
		return Workspace{}, err
	}
	if isolation == None {
		return Workspace{Path: path, Isolation: None, Dir: dir}, nil
	}
	w, err := s.makeWorktree(ctx, id, dir)
	if err != nil {
		return Workspace{}, err
	}
	w.Path = path
	return w, nil
}

// Check returns the folder path leads to, resolved, when a conversation
// may work there, or a Refusal naming the roots.
func (s *Set) Check(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", refuse("the workspace %q is not an absolute path: give the full path of a folder inside %s", path, s.rootsText())
	}
	dir, err := filepath.EvalSymlinks(filepath.Clean(path))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", refuse("the folder %s does not exist: give a folder inside %s", path, s.rootsText())
		}
		return "", refuse("the folder %s cannot be used (%v): give a folder inside %s", path, unwrapPath(err), s.rootsText())
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", refuse("the folder %s cannot be used (%v): give a folder inside %s", path, unwrapPath(err), s.rootsText())
	}
	if !fi.IsDir() {
		return "", refuse("%s is a file, not a folder: give a folder inside %s", path, s.rootsText())
	}
	if !s.inside(dir) {
		leads := ""
		if dir != filepath.Clean(path) {
			leads = " (it leads to " + dir + ")"
		}
		return "", refuse("the folder %s%s is outside the folders this relay lets conversations work in: give a folder inside %s", path, leads, s.rootsText())
	}
	return dir, nil
}

// unwrapPath drops the path an *os.PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Visible reports whether this relay sees w's folder (another relay's
// workspace on a volume this one does not share is not there).
func Visible(w Workspace) bool {
	fi, err := os.Stat(w.Dir)
	return err == nil && fi.IsDir()
}
