package checkpoint

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Restore puts the folder dir back as it was at checkpoint to, one of
// conv's: files added since are removed, changed ones rewritten, deleted
// ones brought back; ignored files are left alone, and so are files over
// MaxFile (Skipped). It first snapshots the folder as it is and returns
// that checkpoint (undo), so that restoring to it undoes the restore. The
// files are what the restore did, each it could not write Failed with why.
// The folder is snapshotted again once written, as a turn that began at
// undo ended: Diff of undo answers what the restore changed, so that a
// client can show what an undo would bring back.
func (s *Store) Restore(ctx context.Context, dir, conv, to string) (undo string, files []File, err error) {
	l, err := s.locate(ctx, dir)
	if err != nil {
		return "", nil, err
	}
	if err := s.resolve(ctx, l, conv, to); err != nil {
		return "", nil, err
	}
	undo, _, err = s.snapshot(ctx, dir, conv, "", "undo of a restore to "+to)
	if err != nil {
		return "", nil, err
	}
	files, err = s.changes(ctx, l, undo, to, true)
	if err != nil {
		return undo, nil, err
	}

	var writes []int
	for i := range files {
		f := &files[i]
		if f.Large {
			f.Status, f.Additions, f.Deletions = Skipped, 0, 0
			continue
		}
		if f.Status != Deleted {
			writes = append(writes, i)
			continue
		}
		if err := removeFile(l.dir, f.Path); err != nil {
			f.Status, f.Error = Failed, err.Error()
		}
	}
	if len(writes) > 0 {
		if err := s.writeFiles(ctx, l, files, writes); err != nil {
			return undo, nil, err
		}
	}
	kept := files[:0]
	for _, f := range files {
		if f.Status != "" {
			kept = append(kept, f)
		}
	}
	// The folder as the restore left it (a file it could not write as it
	// is). Without this snapshot (a disk full now) the restore stands and
	// its undo still restores; only Diff of undo answers ErrUnknown.
	_, _ = s.SnapshotAfter(ctx, dir, conv, undo)
	return undo, kept, nil
}

// writeFiles writes each of files[writes] from its blob, read with one
// git cat-file --batch. A file that the undo snapshot does not hold but the
// folder does is ignored now: it is left alone (its status cleared).
func (s *Store) writeFiles(ctx context.Context, l *location, files []File, writes []int) error {
	cmd, stderr := l.git(s, "cat-file", "--batch").cmd(ctx)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		stdin.Close()
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}()
	rd := bufio.NewReaderSize(stdout, 64<<10)
	for _, i := range writes {
		f := &files[i]
		full := filepath.Join(l.dir, filepath.FromSlash(f.Path))
		if f.Status == Added {
			if fi, err := os.Lstat(full); err == nil && !fi.IsDir() {
				f.Status = "" // there, and not in the snapshot: ignored
				continue
			}
		}
		if _, err := io.WriteString(stdin, f.dstID+"\n"); err != nil {
			return fmt.Errorf("git cat-file: %w: %s", err, stderr)
		}
		header, err := rd.ReadString('\n')
		if err != nil {
			return fmt.Errorf("git cat-file: %w: %s", err, stderr)
		}
		fields := strings.Fields(header)
		if len(fields) != 3 || fields[1] != "blob" {
			return fmt.Errorf("checkpoint: the content of %s is gone from the repository (were its objects pruned?): git cat-file said %q", f.Path, strings.TrimSpace(header))
		}
		size, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			return fmt.Errorf("git cat-file: %q: %w", header, err)
		}
		content := io.LimitReader(rd, size)
		if werr := writeFile(l.dir, f.Path, f.dstMode, content); werr != nil {
			f.Status, f.Error = Failed, werr.Error()
		}
		if _, err := io.Copy(io.Discard, content); err != nil { // what a failed write left
			return fmt.Errorf("git cat-file: %w", err)
		}
		if _, err := rd.Discard(1); err != nil { // the newline after the content
			return fmt.Errorf("git cat-file: %w", err)
		}
	}
	return nil
}

// writeFile writes one file of the folder root from content: a symlink
// for mode 120000, else a regular file, executable for 100755.
func writeFile(root, path, mode string, content io.Reader) error {
	full := filepath.Join(root, filepath.FromSlash(path))
	if !inside(root, full) {
		return fmt.Errorf("%s leaves the folder", path)
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	fi, err := os.Lstat(full)
	switch {
	case err == nil && fi.IsDir():
		if err := os.Remove(full); err != nil {
			return fmt.Errorf("a folder is in the way: %w", err)
		}
	case err == nil && (fi.Mode()&fs.ModeSymlink != 0 || mode == "120000"):
		if err := os.Remove(full); err != nil {
			return err
		}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if mode == "120000" {
		target, err := io.ReadAll(io.LimitReader(content, 1<<20))
		if err != nil {
			return err
		}
		return os.Symlink(string(target), full)
	}
	perm := fs.FileMode(0o644)
	if mode == "100755" {
		perm = 0o755
	}
	if err := writeFrom(full, perm, content); err != nil {
		return err
	}
	if fi, err := os.Stat(full); err == nil && (fi.Mode()&0o100 != 0) != (perm&0o100 != 0) {
		p := fi.Mode().Perm()
		if perm&0o100 != 0 {
			p |= (p & 0o444) >> 2 // executable where readable
		} else {
			p &^= 0o111
		}
		return os.Chmod(full, p)
	}
	return nil
}

// removeFile removes one file of the folder root, and the folders it
// leaves empty up to root.
func removeFile(root, path string) error {
	full := filepath.Join(root, filepath.FromSlash(path))
	if !inside(root, full) {
		return fmt.Errorf("%s leaves the folder", path)
	}
	if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for d := filepath.Dir(full); d != root && inside(root, d); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break
		}
	}
	return nil
}

func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
