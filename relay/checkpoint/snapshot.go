package checkpoint

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// large is a file over MaxFile: named in a snapshot, its content not kept.
type large struct {
	Size  int64 `json:"size"`
	MTime int64 `json:"mtime"` // Unix nanoseconds
}

// Snapshot records the folder dir as it is now for the conversation conv
// and returns the checkpoint: the hash of a commit kept alive by a ref
// under refs/pilotdesk/<conv>/.
func (s *Store) Snapshot(ctx context.Context, dir, conv string) (string, error) {
	id, _, err := s.snapshot(ctx, dir, conv, "", "")
	return id, err
}

// SnapshotAfter records dir as a turn that began at checkpoint before left
// it: Diff of before then answers with this turn's changes.
func (s *Store) SnapshotAfter(ctx context.Context, dir, conv, before string) (string, error) {
	id, _, err := s.snapshot(ctx, dir, conv, before, "")
	return id, err
}

// SnapshotTurn is SnapshotAfter, then Changes from before to the
// checkpoint it made: what a turn changed. When before is the snapshot
// this store last took of conv in dir (Snapshot, at the turn's start) and
// the folder is as it was then (the same tree, the same files over
// MaxFile), nothing changed and it says so without Changes' seven git
// commands (two resolves of two each, diff-tree, each message read): a
// turn that edits nothing, such as a question answered, ran thirteen git
// commands where it now runs six (issue #32: 12 % of a relay's CPU in the
// bench-nats load went to them).
func (s *Store) SnapshotTurn(ctx context.Context, dir, conv, before string) (after string, files []File, truncated bool, err error) {
	after, same, err := s.snapshot(ctx, dir, conv, before, "")
	if err != nil || same {
		return after, nil, false, err
	}
	files, truncated, err = s.Changes(ctx, dir, conv, before, after)
	return after, files, truncated, err
}

// snapshot records dir for conv: after the turn that began at before
// when before is set; note, when set, is a line of the commit's message
// that makes the snapshot a commit of its own, never the last plain one
// again (a restore's undo, whose diff is the restore's own: it must not
// share a turn's checkpoint, whose diff is the turn's). same says that
// the snapshot holds what before does, known without git: before is
// conv's last plain snapshot here, of the same tree and message (the same
// files over MaxFile).
func (s *Store) snapshot(ctx context.Context, dir, conv, before, note string) (id string, same bool, err error) {
	l, err := s.locate(ctx, dir)
	if err != nil {
		return "", false, err
	}
	if before != "" {
		if err := s.resolve(ctx, l, conv, before); err != nil {
			return "", false, err
		}
	}
	tree, bigs, err := s.writeTree(ctx, l)
	if err != nil {
		return "", false, fmt.Errorf("checkpoint: snapshot of %s: %w", l.dir, err)
	}
	msg := "pilotdesk checkpoint\n\nconversation " + conv + "\n"
	if note != "" {
		msg += note + "\n"
	}
	for _, p := range sortedKeys(bigs) {
		b, _ := json.Marshal(p)
		msg += fmt.Sprintf("large %d %d %s\n", bigs[p].Size, bigs[p].MTime, b)
	}
	l.mu.Lock()
	last := l.last[conv]
	l.mu.Unlock()
	unchanged := last.tree == tree && last.msg == msg && last.id != ""
	if before == "" && note == "" && unchanged {
		// The folder as conv's last plain snapshot saw it: that one is
		// this one too (no commit, no ref to write).
		return last.id, true, nil
	}
	same = note == "" && before == last.id && unchanged
	args := []string{"commit-tree", "--no-gpg-sign", tree, "-F", "-"}
	if before != "" {
		args = append(args, "-p", before)
	}
	g := l.git(s, args...)
	g.in = strings.NewReader(msg)
	out, err := g.output(ctx)
	if err != nil {
		return "", false, fmt.Errorf("checkpoint: snapshot of %s: %w", l.dir, err)
	}
	id = strings.TrimSpace(string(out))
	lines := "update " + refsOf(conv) + id + " " + id + "\n"
	if before != "" {
		lines += "update " + refsOf(conv) + "turn/" + before + " " + id + "\n"
	}
	// Listed before its first ref is written: a crash between the two
	// leaves a name with no refs, never refs Prune would not know as ours.
	s.rememberConv(conv)
	g = l.git(s, "update-ref", "--stdin")
	g.in = strings.NewReader(lines)
	if _, err := g.output(ctx); err != nil {
		return "", false, fmt.Errorf("checkpoint: snapshot of %s: %w", l.dir, err)
	}
	if before == "" && note == "" {
		l.mu.Lock()
		if l.last == nil {
			l.last = map[string]lastSnapshot{}
		}
		l.last[conv] = lastSnapshot{tree: tree, msg: msg, id: id}
		l.mu.Unlock()
	}
	return id, same, nil
}

// writeTree writes the tree of what the folder holds now, with the
// location's private index (copied, updated where status says the folder
// differs from it, then put back as the next snapshot's start), and
// returns it with the files over MaxFile it left out.
func (s *Store) writeTree(ctx context.Context, l *location) (string, map[string]large, error) {
	tmp, known, err := s.startIndex(l)
	if err != nil {
		return "", nil, err
	}
	defer os.Remove(tmp)
	env := []string{"GIT_INDEX_FILE=" + tmp}

	args := []string{"-c", "core.splitIndex=false", "status", "--porcelain=v2", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=all"}
	if l.prefix != "" {
		args = append(args, "--", l.prefix)
	}
	g := l.git(s, args...)
	g.env = env
	out, err := g.output(ctx)
	if err != nil {
		return "", nil, err
	}
	changed, removed := parseStatus(out)
	if len(changed) == 0 && len(removed) == 0 && known != "" {
		// Nothing changed since the index's tree was written: the
		// common case of a turn's first snapshot, one git command.
		l.mu.Lock()
		err = os.Rename(tmp, l.index)
		l.mu.Unlock()
		return known, map[string]large{}, err
	}

	u, err := l.classify(changed, removed)
	if u.linkDir != "" {
		defer os.RemoveAll(u.linkDir)
	}
	if err != nil {
		return "", nil, err
	}
	if err := u.hash(ctx, s, l); err != nil {
		return "", nil, err
	}
	if u.info.Len() > 0 {
		g := l.git(s, "-c", "core.splitIndex=false", "update-index", "-z", "--index-info")
		g.env, g.in = env, &u.info
		if _, err := g.output(ctx); err != nil {
			return "", nil, err
		}
	}
	tree, err := s.treeOfIndex(ctx, l, env)
	if err != nil {
		return "", nil, err
	}
	l.mu.Lock()
	err = os.Rename(tmp, l.index)
	l.tree = tree
	if len(u.bigs) > 0 {
		l.tree = "" // they show as changed each time: never "nothing changed"
	}
	l.mu.Unlock()
	if err != nil {
		return "", nil, err
	}
	return tree, u.bigs, nil
}

// startIndex copies the location's private index to a temporary file for
// one snapshot to update, and returns it with the tree that index held,
// if known. A folder's first snapshot starts from an empty index, or in a
// repository from the user's index (read, never written): its stat data
// spare hashing every tracked file again.
func (s *Store) startIndex(l *location) (tmp, known string, err error) {
	if err := os.MkdirAll(filepath.Dir(l.index), 0o700); err != nil {
		return "", "", err
	}
	tmp = l.index + ".tmp-" + randomSuffix()
	l.mu.Lock()
	err = copyIndex(l.index, tmp)
	known = l.tree // the tree of the index just copied, if known
	l.mu.Unlock()
	if known == "" {
		// The folder's first snapshot since the store started (or one
		// with large files): an index written now is noted.
		s.noteIndex(l)
	}
	if errors.Is(err, fs.ErrNotExist) && l.seed != "" {
		err = copyIndex(l.seed, tmp)
	}
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		os.Remove(tmp)
		return "", "", err
	}
	return tmp, known, nil
}

// indexUpdate is what one snapshot changes in its index: the paths to
// hash (regular files, and symlinks' targets written to temp files under
// linkDir) and the update-index --index-info lines, removals first.
type indexUpdate struct {
	info    bytes.Buffer
	toHash  []string // files to hash, in the order of paths
	paths   []string // their paths in the index
	modes   []string // and modes
	bigs    map[string]large
	linkDir string // temp files of symlinks' targets; "" none
}

// classify sorts the paths status named: gone ones and what git does not
// keep (sockets, fifos, files over MaxFile, named in bigs) are removed
// from the index, regular files and symlinks are to be hashed. Symlinks
// go after the files, as their targets' temp files are hashed as files.
func (l *location) classify(changed, removed []string) (*indexUpdate, error) {
	u := &indexUpdate{bigs: map[string]large{}}
	for _, p := range removed {
		u.remove(p)
	}
	var links, linkPaths []string
	for _, p := range changed {
		full := filepath.Join(l.top, filepath.FromSlash(p))
		fi, err := os.Lstat(full)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			u.remove(p)
		case err != nil:
			return u, err
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(full)
			if err != nil {
				return u, err
			}
			if u.linkDir == "" {
				if u.linkDir, err = os.MkdirTemp("", "pilotdesk-links-"); err != nil {
					return u, err
				}
			}
			f := filepath.Join(u.linkDir, strconv.Itoa(len(links)))
			if err := os.WriteFile(f, []byte(target), 0o600); err != nil {
				return u, err
			}
			links, linkPaths = append(links, f), append(linkPaths, p)
		case fi.Mode().IsRegular() && fi.Size() > MaxFile:
			u.remove(p)
			u.bigs[strings.TrimPrefix(p, l.prefix)] = large{Size: fi.Size(), MTime: fi.ModTime().UnixNano()}
		case fi.Mode().IsRegular():
			mode := "100644"
			if fi.Mode()&0o100 != 0 {
				mode = "100755"
			}
			u.toHash, u.paths, u.modes = append(u.toHash, full), append(u.paths, p), append(u.modes, mode)
		default:
			u.remove(p) // a socket, a fifo: nothing git keeps
		}
	}
	for i := range links {
		u.toHash, u.paths, u.modes = append(u.toHash, links[i]), append(u.paths, linkPaths[i]), append(u.modes, "120000")
	}
	return u, nil
}

// remove adds an update-index line that removes path (a zero id with mode
// 0 removes it).
func (u *indexUpdate) remove(path string) {
	fmt.Fprintf(&u.info, "0 %s\t%s\x00", strings.Repeat("0", 40), path)
}

// hash writes the blobs of every path to hash with one git hash-object and
// adds their update-index lines.
func (u *indexUpdate) hash(ctx context.Context, s *Store, l *location) error {
	if len(u.toHash) == 0 {
		return nil
	}
	g := l.git(s, "hash-object", "-w", "--no-filters", "--stdin-paths")
	g.in = strings.NewReader(strings.Join(u.toHash, "\n") + "\n")
	out, err := g.output(ctx)
	if err != nil {
		return err
	}
	ids := strings.Fields(string(out))
	if len(ids) != len(u.toHash) {
		return fmt.Errorf("git hash-object gave %d ids for %d files", len(ids), len(u.toHash))
	}
	for i, p := range u.paths {
		// A conflicted path's stages go first, then stage 0.
		u.remove(p)
		fmt.Fprintf(&u.info, "%s %s\t%s\x00", u.modes[i], ids[i], p)
	}
	return nil
}

// treeOfIndex writes the tree of the index env names (under the
// location's prefix): the empty tree when git sees nothing in the folder.
func (s *Store) treeOfIndex(ctx context.Context, l *location, env []string) (string, error) {
	args := []string{"write-tree"}
	if l.prefix != "" {
		args = append(args, "--prefix="+l.prefix)
	}
	g := l.git(s, args...)
	g.env = env
	out, err := g.output(ctx)
	if err != nil {
		if l.prefix == "" || !strings.Contains(err.Error(), "not found") {
			return "", err
		}
		g = l.git(s, "mktree", "-z")
		g.in = strings.NewReader("")
		if out, err = g.output(ctx); err != nil {
			return "", err
		}
	}
	return strings.TrimSpace(string(out)), nil
}

// parseStatus reads git status --porcelain=v2 -z: the paths whose content
// in the folder may differ from the index (or are not in it), and those
// the folder no longer holds.
func parseStatus(out []byte) (changed, removed []string) {
	fields := bytes.Split(out, []byte{0})
	for _, f := range fields {
		if len(f) < 2 {
			continue
		}
		line := string(f)
		switch line[0] {
		case '?':
			p := line[2:]
			if !strings.HasSuffix(p, "/") { // a repository inside: not ours to keep
				changed = append(changed, p)
			}
		case '1', 'u':
			n := 9 // "1 XY sub mH mI mW hH hI path"
			if line[0] == 'u' {
				n = 11 // "u XY sub m1 m2 m3 mW h1 h2 h3 path"
			}
			parts := strings.SplitN(line, " ", n)
			if len(parts) < n || len(parts[1]) != 2 {
				continue
			}
			p, y := parts[n-1], parts[1][1]
			switch {
			case y == 'D':
				removed = append(removed, p)
			case y != '.' || line[0] == 'u':
				changed = append(changed, p)
			}
		}
	}
	return changed, removed
}

// copyIndex copies a git index file and keeps its modification time. Git
// compares files' timestamps to the second and trusts an entry whose stat
// data match unless it is "racily clean" (not older than the index file
// itself): a copy with a fresh mtime would make an entry recorded in the
// same second as a later same-size rewrite look safely old, and the
// snapshot would keep the file's old content
// (TestRewriteInTheSameSecondIsSeen).
func copyIndex(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if err := writeFrom(to, 0o600, in); err != nil {
		return err
	}
	return os.Chtimes(to, time.Time{}, fi.ModTime())
}

// writeFrom creates or truncates path with perm (for a new file) and
// copies r into it. The Close error counts: it is where a full disk or
// a lost write shows on some file systems, and a checkpoint that
// silently lost bytes would restore the wrong content.
func writeFrom(path string, perm fs.FileMode, r io.Reader) error {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// readLarge reads the files over MaxFile a snapshot's message names.
func (s *Store) readLarge(ctx context.Context, l *location, id string) (map[string]large, error) {
	out, err := l.git(s, "cat-file", "commit", id).output(ctx)
	if err != nil {
		return nil, err
	}
	bigs := map[string]large{}
	_, body, _ := bytes.Cut(out, []byte("\n\n"))
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "large ")
		if !ok {
			continue
		}
		parts := strings.SplitN(rest, " ", 3)
		if len(parts) != 3 {
			continue
		}
		size, _ := strconv.ParseInt(parts[0], 10, 64)
		mtime, _ := strconv.ParseInt(parts[1], 10, 64)
		var p string
		if json.Unmarshal([]byte(parts[2]), &p) == nil {
			bigs[p] = large{Size: size, MTime: mtime}
		}
	}
	return bigs, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
