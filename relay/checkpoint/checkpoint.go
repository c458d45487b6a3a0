// Package checkpoint records what a folder holds as git commit objects
// (snapshots, or checkpoints), compares two of them and puts a folder back
// as one held it, with the git command and a private index: never the
// user's index, branches, stash or files.
//
// A folder inside a repository is snapshotted into that repository's
// object store, its snapshots kept alive by refs under
// refs/pilotdesk/<conversation>/; a folder in no repository gets a bare
// repository of its own under the store's data dir (the folder never gets
// a .git). A snapshot holds every file git would see in the folder,
// tracked or untracked, less what .gitignore ignores; a file over MaxFile
// is named in the snapshot's message but its content is not kept.
package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/pilotdesk/pilotdesk/internal/atomicfile"
)

// MaxFile is the largest file whose content a snapshot keeps (10 MiB).
const MaxFile = 10 << 20

// MaxFiles is the most entries a change set lists.
const MaxFiles = 1000

// ErrUnknown is wrapped by the error for a checkpoint that is not one of
// the conversation's.
var ErrUnknown = errors.New("not a checkpoint of this conversation")

// Store takes and reads snapshots. It is safe for concurrent use.
type Store struct {
	git  string   // the git command's path
	data string   // <data dir>/checkpoints: bare repositories, private indexes
	env  []string // baseEnv

	mu   sync.Mutex
	locs map[string]*location // by folder
	// convs are the conversations (RefName) whose snapshots the store
	// took, as its conversations file lists them; nil until read.
	convs map[string]bool

	// findMu serializes finding a folder's location the first time: two
	// conversations starting at once in one new plain folder must not both
	// run git init on its repository ("could not lock config file").
	findMu sync.Mutex
}

// New returns a store that keeps what it owns under dataDir/checkpoints.
// Without the git command it returns an error that says checkpoints are
// off and why.
func New(dataDir string) (*Store, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, errors.New("checkpoints are off: the git command was not found (install git to record and undo what each turn changes)")
	}
	data := filepath.Join(dataDir, "checkpoints")
	// What a crash left half removed (removeRepository).
	left, _ := filepath.Glob(filepath.Join(data, "repos", "*"+removingSuffix))
	for _, dir := range left {
		_ = os.RemoveAll(dir)
	}
	return &Store{git: git, data: data, env: baseEnv(), locs: map[string]*location{}}, nil
}

// location is where a folder's snapshots go.
type location struct {
	dir    string   // the folder, absolute
	top    string   // the work tree's root: the repository's, or dir
	prefix string   // dir relative to top, "" or ending in "/"
	gitDir []string // global options naming the repository (a bare one's)
	bare   string   // the bare repository in the data dir, if that is where
	index  string   // the private index this store keeps for the folder
	seed   string   // the user's index, copied to start the private one

	mu   sync.Mutex              // guards the private index's file, tree and last
	tree string                  // the tree the private index held when last written; "" unknown
	last map[string]lastSnapshot // each conversation's last snapshot that had no parent
}

// lastSnapshot is a conversation's last snapshot without parent: taken of
// the same tree, with the same message, it is the same snapshot.
type lastSnapshot struct{ tree, msg, id string }

// locate finds (once per folder) where dir's snapshots go.
func (s *Store) locate(ctx context.Context, dir string) (*location, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: folder %q: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("checkpoint: the folder %s is gone: %w", abs, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("checkpoint: %s is not a folder", abs)
	}
	s.mu.Lock()
	loc := s.locs[abs]
	s.mu.Unlock()
	if loc != nil {
		return loc, nil
	}
	s.findMu.Lock()
	defer s.findMu.Unlock()
	s.mu.Lock()
	loc = s.locs[abs]
	s.mu.Unlock()
	if loc != nil {
		return loc, nil
	}
	loc, err = s.find(ctx, abs)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.locs[abs]; l != nil {
		return l, nil
	}
	s.locs[abs] = loc
	s.rememberLocked(abs)
	return loc, nil
}

// foldersFile lists, one a line, the folders the store ever snapshotted,
// so that Prune finds the refs of conversations that are gone.
func (s *Store) foldersFile() string { return filepath.Join(s.data, "folders") }

func (s *Store) rememberLocked(dir string) {
	if slices.Contains(s.folders(), dir) {
		return
	}
	_ = s.appendLine(s.foldersFile(), dir) // a folder not listed is only not pruned
}

func (s *Store) folders() []string { return readLines(s.foldersFile()) }

// conversationsFile lists, one a line, the conversations (RefName) whose
// snapshots the store took: the only ones Prune deletes. A repository's
// refs/pilotdesk/ may hold another store's too (another relay's data dir
// working in a folder of the same repository, or of another worktree of
// it), which are not the store's to judge.
func (s *Store) conversationsFile() string { return filepath.Join(s.data, "conversations") }

// loadConvsLocked reads the conversations file once.
func (s *Store) loadConvsLocked() {
	if s.convs != nil {
		return
	}
	s.convs = map[string]bool{}
	for _, c := range readLines(s.conversationsFile()) {
		s.convs[c] = true
	}
}

// rememberConv adds conv to the conversations file. A conversation it
// could not add is not pruned: its refs stay, nothing is lost.
func (s *Store) rememberConv(conv string) {
	c := RefName(conv)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loadConvsLocked()
	if s.convs[c] {
		return
	}
	if s.appendLine(s.conversationsFile(), c) == nil {
		s.convs[c] = true
	}
}

// appendLine adds line to file, one of the data dir's lists (the folders
// and the conversations files), making the data dir first.
func (s *Store) appendLine(file, line string) error {
	if err := os.MkdirAll(s.data, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	_ = f.Close()
	return err
}

// readLines returns the lines of one of the data dir's lists, less empty
// ones: none when it is missing or cannot be read. Split at line ends
// only: a folder's name may hold spaces.
func readLines(file string) []string {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var lines []string
	for l := range strings.Lines(string(b)) {
		if l = strings.TrimRight(l, "\r\n"); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// Prune deletes, in every folder the store snapshotted, the refs of each
// of its conversations keep does not keep (one deleted while the relay
// was not running, or whose history --history-max-age dropped before the
// relay started), as Delete does, and forgets them.
func (s *Store) Prune(ctx context.Context, keep func(conv string) bool) error {
	s.mu.Lock()
	dirs := s.folders()
	s.loadConvsLocked()
	mine := maps.Clone(s.convs)
	s.mu.Unlock()
	failed := map[string]bool{}
	var errs []error
	for _, dir := range dirs {
		l, err := s.locate(ctx, dir)
		if err != nil {
			if l = s.bareFor(dir); l == nil {
				continue
			}
		}
		out, err := l.git(s, "for-each-ref", "--format=%(refname)", "refs/pilotdesk/").output(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		seen := map[string]bool{}
		for _, ref := range strings.Fields(string(out)) {
			parts := strings.SplitN(strings.TrimPrefix(ref, "refs/pilotdesk/"), "/", 2)
			if c := parts[0]; !seen[c] {
				seen[c] = true
				// A bare repository of the store's own holds its
				// conversations only (those of a data dir from before the
				// conversations file too).
				if (mine[c] || l.bare != "") && !keep(c) {
					if err := s.Delete(ctx, dir, c); err != nil {
						failed[c] = true
						errs = append(errs, err)
					}
				}
			}
		}
	}
	if err := s.forget(mine, keep, failed); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// forget rewrites the conversations file without the conversations of
// mine that keep does not keep and whose refs are gone.
func (s *Store) forget(mine map[string]bool, keep func(conv string) bool, failed map[string]bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	gone := 0
	for c := range mine {
		if !keep(c) && !failed[c] {
			delete(s.convs, c)
			gone++
		}
	}
	if gone == 0 {
		return nil
	}
	if err := writeLines(s.conversationsFile(), slices.Sorted(maps.Keys(s.convs))); err != nil {
		return fmt.Errorf("checkpoint: the list of conversations: %w", err)
	}
	return nil
}

// writeLines replaces one of the data dir's lists (the folders and the
// conversations files) with lines, one an entry. Synced before the
// rename: a crash must leave the old list or the new one, never an empty
// file, which would forget every conversation and leave their refs for
// good.
func writeLines(file string, lines []string) error {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return atomicfile.WriteFile(file, []byte(b.String()), atomicfile.Private)
}

// RefName is how a conversation's id appears in its refs'
// names (refs/pilotdesk/<RefName>/), which Prune's keep is given.
func RefName(conv string) string { return refComponent(conv) }

func hashOf(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])[:24]
}

// find asks git whether dir is inside a work tree; if not, dir's snapshots
// go to a bare repository of the store's own.
func (s *Store) find(ctx context.Context, dir string) (*location, error) {
	out, err := gitCmd{s: s, dir: dir, args: []string{"rev-parse", "--is-inside-work-tree", "--show-toplevel", "--absolute-git-dir", "--show-prefix", "--git-path", "index"}}.output(ctx)
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if err == nil && len(lines) == 5 && lines[0] == "true" {
		top, gitDir, prefix, index := lines[1], lines[2], lines[3], lines[4]
		if !filepath.IsAbs(index) {
			index = filepath.Join(dir, index)
		}
		return &location{
			dir: dir, top: top, prefix: prefix,
			gitDir: []string{"--git-dir=" + gitDir, "--work-tree=" + top},
			index:  filepath.Join(s.data, "index", hashOf(gitDir, prefix)),
			seed:   index,
		}, nil
	}
	bare := filepath.Join(s.data, "repos", hashOf(dir)+".git")
	if _, err := os.Stat(filepath.Join(bare, "HEAD")); err != nil {
		if err := os.MkdirAll(filepath.Dir(bare), 0o700); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		if _, err := (gitCmd{s: s, dir: s.data, args: []string{"init", "--bare", "--quiet", bare}}).output(ctx); err != nil {
			return nil, fmt.Errorf("checkpoint: a repository for %s: %w", dir, err)
		}
		// Which folder it is for, for a person looking at the data dir.
		_ = os.WriteFile(filepath.Join(bare, "description"), []byte("pilotdesk checkpoints of "+dir+"\n"), 0o600)
	}
	return &location{
		dir: dir, top: dir, bare: bare,
		gitDir: []string{"--git-dir=" + bare, "--work-tree=" + dir},
		index:  filepath.Join(bare, "pilotdesk-index"),
	}, nil
}

// indexNote is the file beside the private indexes that names the one of
// the folder dir. Forget reads it once the folder is gone: git can no
// longer say which index it had (a removed worktree's git dir goes with
// it), and a store started since has not located the folder.
func (s *Store) indexNote(dir string) string {
	return filepath.Join(s.data, "index", hashOf(dir)+".folder")
}

// noteIndex writes the indexNote of l, a folder in a repository whose
// snapshot writes its private index, unless it is there. Without it a
// worktree's index outlives the worktree; the snapshot goes on all the
// same.
func (s *Store) noteIndex(l *location) {
	if l.bare != "" {
		return // its index goes with the bare repository
	}
	note := s.indexNote(l.dir)
	if _, err := os.Stat(note); err == nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(note), 0o700); err != nil {
		return
	}
	_ = atomicfile.WriteFile(note, []byte(filepath.Base(l.index)+"\n"), atomicfile.Private)
}

// notedIndex is the private index indexNote names for dir, "" if none.
func (s *Store) notedIndex(dir string) string {
	b, err := os.ReadFile(s.indexNote(dir))
	name := strings.TrimSpace(string(b))
	if err != nil || name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		return ""
	}
	return filepath.Join(s.data, "index", name)
}

// git is a git command on the location's repository, run at its top.
func (l *location) git(s *Store, args ...string) gitCmd {
	a := append([]string{"--literal-pathspecs", "-c", "core.quotePath=false"}, l.gitDir...)
	return gitCmd{s: s, dir: l.top, args: append(a, args...)}
}

// refComponent makes a conversation's id a part of a ref name: itself when
// it is a safe one (a UUID is), a hash of it otherwise.
func refComponent(conv string) string {
	ok := conv != "" && len(conv) <= 100 && conv[0] != '.' && !strings.HasSuffix(conv, ".lock")
	for _, r := range conv {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			ok = false
		}
	}
	if ok {
		return conv
	}
	return "h-" + hashOf(conv)
}

func refsOf(conv string) string { return "refs/pilotdesk/" + refComponent(conv) + "/" }

// isID says whether id looks like a commit's hash (SHA-1 or SHA-256).
func isID(id string) bool {
	if len(id) != 40 && len(id) != 64 {
		return false
	}
	for _, r := range id {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// resolve checks that id is a snapshot of conv in dir's repository, and
// that its commit is still there.
func (s *Store) resolve(ctx context.Context, l *location, conv, id string) error {
	if !isID(id) {
		return fmt.Errorf("checkpoint %q: %w", id, ErrUnknown)
	}
	// One git command where there were two (for-each-ref, then cat-file
	// -e of the tree): %(tree) reads the commit, so git fails when the
	// ref is there but its snapshot's objects are not, and prints nothing
	// when there is no such ref.
	out, err := l.git(s, "for-each-ref", "--format=%(objectname) %(tree)", refsOf(conv)+id).output(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint %s: its snapshot is gone from the repository (were its objects pruned?): %w", id, err)
	}
	if got, _, _ := strings.Cut(strings.TrimSpace(string(out)), " "); got != id {
		return fmt.Errorf("checkpoint %s: %w", id, ErrUnknown)
	}
	return nil
}

// Delete removes every ref of conv's snapshots in dir's repository, so
// that git's garbage collection can prune them; a bare repository of the
// store's own that keeps no snapshot any more is removed whole.
func (s *Store) Delete(ctx context.Context, dir, conv string) error {
	l, err := s.locate(ctx, dir)
	if err != nil {
		if l = s.bareFor(dir); l == nil {
			return nil // a folder that is gone, and no repository of ours
		}
	}
	l.mu.Lock()
	delete(l.last, conv)
	l.mu.Unlock()
	out, err := l.git(s, "for-each-ref", "--format=delete %(refname)", refsOf(conv)).output(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint: the refs of %s: %w", conv, err)
	}
	if len(out) > 0 {
		g := l.git(s, "update-ref", "--stdin")
		g.in = bytes.NewReader(out)
		if _, err := g.output(ctx); err != nil {
			return fmt.Errorf("checkpoint: deleting the refs of %s: %w", conv, err)
		}
	}
	if l.bare == "" {
		return nil
	}
	left, err := l.git(s, "for-each-ref", "--count=1", "--format=%(refname)", "refs/pilotdesk/").output(ctx)
	if err == nil && len(bytes.TrimSpace(left)) == 0 {
		s.mu.Lock()
		delete(s.locs, l.dir)
		s.mu.Unlock()
		if err := removeRepository(l.bare); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	} else if err == nil {
		// The objects only the deleted refs kept go now: the repository
		// is the store's, no one else's work is in it.
		_, _ = l.git(s, "-c", "gc.reflogExpireUnreachable=now", "prune", "--expire=now").output(ctx)
	}
	return nil
}

// Forget drops what the store keeps for dir once the folder is gone for
// good (a deleted conversation's worktree, removed with it): its private
// index, which no snapshot would read again and which is as large as the
// repository's index, and its line in the folders file. Its snapshots'
// refs are Delete's. A folder that is still there is left alone.
func (s *Store) Forget(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	if _, err := os.Lstat(abs); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	abs = resolveGone(abs)
	s.mu.Lock()
	l := s.locs[abs]
	delete(s.locs, abs)
	folders := s.folders()
	kept := slices.DeleteFunc(slices.Clone(folders), func(f string) bool { return f == abs })
	var errs []error
	if len(kept) < len(folders) {
		if err := writeLines(s.foldersFile(), kept); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint: the list of folders: %w", err))
		}
	}
	s.mu.Unlock()
	// A folder not located since the store started: its note names it.
	index := s.notedIndex(abs)
	if l != nil && l.bare == "" { // a bare repository's index goes with it
		l.mu.Lock()
		err := os.Remove(l.index)
		l.tree = ""
		l.mu.Unlock()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("checkpoint: the index of %s: %w", abs, err))
		}
	} else if l == nil && index != "" {
		if err := os.Remove(index); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("checkpoint: the index of %s: %w", abs, err))
		}
	}
	if err := os.Remove(s.indexNote(abs)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("checkpoint: the note of the index of %s: %w", abs, err))
	}
	return errors.Join(errs...)
}

// resolveGone is path, gone, with the symlinks of its deepest folder that
// is still there resolved, as locate resolved the whole path when it was
// there.
func resolveGone(path string) string {
	rest := ""
	for dir := path; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		if filepath.Dir(dir) == dir {
			return path
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// removingSuffix marks a bare repository being removed: renamed first, it
// is no repository of the store's any more, so no one (a later start, a
// glob of repos/*.git) finds it half removed.
const removingSuffix = ".removing"

// removeRepository renames the bare repository out of the way, then
// removes it. A removal that a crash cut short leaves a folder ending in
// removingSuffix, which New removes.
func removeRepository(bare string) error {
	gone := bare + removingSuffix
	if err := os.Rename(bare, gone); err != nil {
		return fmt.Errorf("removing %s: %w", bare, err)
	}
	return os.RemoveAll(gone)
}

// bareFor is the location of the store's bare repository for a folder that
// is gone, if there is one.
func (s *Store) bareFor(dir string) *location {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	bare := filepath.Join(s.data, "repos", hashOf(abs)+".git")
	if _, err := os.Stat(filepath.Join(bare, "HEAD")); err != nil {
		return nil
	}
	return &location{dir: abs, top: s.data, bare: bare, gitDir: []string{"--git-dir=" + bare}}
}
