package checkpoint

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// File statuses.
const (
	Added    = "added"
	Modified = "modified"
	Deleted  = "deleted"
	Skipped  = "skipped" // a restore left it as it is (over MaxFile)
	Failed   = "failed"  // a restore could not write it (Error says why)
)

// File is one changed file: its path relative to the folder, what
// happened to it, its line counts, whether it is binary (or over MaxFile:
// Large too), and for a restore that could not write it, why.
type File struct {
	Path      string `json:"path"`
	Status    string `json:"status"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	Binary    bool   `json:"binary,omitempty"`
	// Large: over MaxFile in either snapshot, so its content is not kept
	// and a restore leaves it as it is (Skipped).
	Large bool   `json:"large,omitempty"`
	Error string `json:"error,omitempty"`

	srcMode, dstMode string // from git's raw diff
	dstID            string
}

// Changes returns what changed in dir from checkpoint from to checkpoint
// to, both conv's, sorted by path: at most MaxFiles entries, and whether
// there were more.
func (s *Store) Changes(ctx context.Context, dir, conv, from, to string) ([]File, bool, error) {
	l, err := s.locate(ctx, dir)
	if err != nil {
		return nil, false, err
	}
	for _, id := range []string{from, to} {
		if err := s.resolve(ctx, l, conv, id); err != nil {
			return nil, false, err
		}
	}
	files, err := s.changes(ctx, l, from, to, true)
	if err != nil {
		return nil, false, err
	}
	if len(files) > MaxFiles {
		return files[:MaxFiles], true, nil
	}
	return files, false, nil
}

// After returns the checkpoint a turn that began at before ended at, or
// an error wrapping ErrUnknown when no turn of conv began there.
func (s *Store) After(ctx context.Context, dir, conv, before string) (string, error) {
	l, err := s.locate(ctx, dir)
	if err != nil {
		return "", err
	}
	if err := s.resolve(ctx, l, conv, before); err != nil {
		return "", err
	}
	out, err := l.git(s, "for-each-ref", "--format=%(objectname)", refsOf(conv)+"turn/"+before).output(ctx)
	if err != nil {
		return "", fmt.Errorf("checkpoint %s: %w", before, err)
	}
	after := strings.TrimSpace(string(out))
	if after == "" {
		return "", fmt.Errorf("checkpoint %s: no turn began there: %w", before, ErrUnknown)
	}
	return after, nil
}

// changes compares two snapshots' trees and their lists of large files.
func (s *Store) changes(ctx context.Context, l *location, from, to string, counts bool) ([]File, error) {
	args := []string{"diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", "--raw"}
	if counts {
		args = append(args, "--numstat")
	}
	out, err := l.git(s, append(args, from, to)...).output(ctx)
	if err != nil {
		return nil, err
	}
	byPath := map[string]*File{}
	var files []*File
	tokens := bytes.Split(out, []byte{0})
	for i := 0; i < len(tokens); i++ {
		t := string(tokens[i])
		if t == "" {
			continue
		}
		if t[0] == ':' {
			// ":srcmode dstmode srcid dstid S" then the path.
			parts := strings.Fields(t[1:])
			if len(parts) != 5 || i+1 >= len(tokens) {
				continue
			}
			i++
			f := &File{Path: string(tokens[i]), srcMode: parts[0], dstMode: parts[1], dstID: parts[3]}
			switch parts[4][0] {
			case 'A':
				f.Status = Added
			case 'D':
				f.Status = Deleted
			default:
				f.Status = Modified
			}
			byPath[f.Path] = f
			files = append(files, f)
			continue
		}
		// "additions\tdeletions\tpath"
		parts := strings.SplitN(t, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		f := byPath[parts[2]]
		if f == nil {
			continue
		}
		if parts[0] == "-" {
			f.Binary = true
			continue
		}
		f.Additions, _ = strconv.Atoi(parts[0])
		f.Deletions, _ = strconv.Atoi(parts[1])
	}

	// Files over MaxFile are in neither tree, only named in the messages.
	bigFrom, err := s.readLarge(ctx, l, from)
	if err != nil {
		return nil, err
	}
	bigTo, err := s.readLarge(ctx, l, to)
	if err != nil {
		return nil, err
	}
	mark := func(p, status string) {
		f := byPath[p]
		if f == nil {
			f = &File{Path: p}
			byPath[p] = f
			files = append(files, f)
		}
		f.Status, f.Binary, f.Large, f.Additions, f.Deletions = status, true, true, 0, 0
	}
	for p, b := range bigTo {
		a, was := bigFrom[p]
		switch f := byPath[p]; {
		case was && a == b:
		case was, f != nil: // changed while large, or was a kept file (the tree lost it)
			mark(p, Modified)
		default:
			mark(p, Added)
		}
	}
	for p := range bigFrom {
		if _, still := bigTo[p]; still {
			continue
		}
		if f := byPath[p]; f != nil { // a kept file now (the tree gained it)
			mark(p, Modified)
		} else {
			mark(p, Deleted)
		}
	}
	slices.SortFunc(files, func(a, b *File) int { return strings.Compare(a.Path, b.Path) })
	list := make([]File, len(files))
	for i, f := range files {
		list[i] = *f
	}
	return list, nil
}

// Patch is one file's unified diff, cut (Truncated) when the answer's
// budget ran out.
type Patch struct {
	Path      string `json:"path"`
	Status    string `json:"status"`
	Patch     string `json:"patch"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Diff returns the unified diff of the turn that began at checkpoint
// before (of one file when path is not empty), its patches' text at most
// budget bytes in all, each cut patch marked Truncated.
func (s *Store) Diff(ctx context.Context, dir, conv, before, path string, budget int) ([]Patch, error) {
	after, err := s.After(ctx, dir, conv, before)
	if err != nil {
		return nil, err
	}
	l, err := s.locate(ctx, dir)
	if err != nil {
		return nil, err
	}
	if err := s.resolve(ctx, l, conv, after); err != nil {
		return nil, err
	}
	files, err := s.changes(ctx, l, before, after, false)
	if err != nil {
		return nil, err
	}
	var patches []Patch
	var kept []string // the files git prints a patch for, in its order
	for _, f := range files {
		if path != "" && f.Path != path {
			continue
		}
		patches = append(patches, Patch{Path: f.Path, Status: f.Status})
		if f.Large {
			patches[len(patches)-1].Patch = "(a file over 10 MiB: its content is not kept)\n"
		} else {
			kept = append(kept, f.Path)
		}
	}
	if path != "" && len(patches) == 0 {
		return nil, fmt.Errorf("the turn at checkpoint %s did not change %s: %w", before, path, ErrUnknown)
	}
	index := map[string]int{}
	for i, p := range patches {
		index[p.Path] = i
		budget -= len(p.Patch)
	}
	if len(kept) == 0 {
		return patches, nil
	}
	args := []string{"diff-tree", "-r", "-p", "--no-renames", "--no-ext-diff", "--no-color", before, after}
	if path != "" {
		args = append(args, "--", path)
	}
	cmd, stderr := l.git(s, args...).cmd(ctx)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	next, cur := 0, -1
	var b strings.Builder
	flush := func() {
		if cur >= 0 {
			patches[cur].Patch = b.String()
		}
		b.Reset()
	}
	rd := bufio.NewReaderSize(stdout, 64<<10)
	lineStart := true
	for {
		chunk, err := rd.ReadSlice('\n')
		if lineStart && bytes.HasPrefix(chunk, []byte("diff --git ")) {
			flush()
			cur = -1
			if next < len(kept) {
				cur = index[kept[next]]
				next++
			}
		}
		lineStart = err == nil
		if cur >= 0 && len(chunk) > 0 {
			if len(chunk) <= budget {
				b.Write(chunk)
				budget -= len(chunk)
			} else {
				patches[cur].Truncated = true
				budget = 0
			}
		}
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if !errors.Is(err, io.EOF) {
				_ = cmd.Process.Kill()
			}
			break
		}
	}
	flush()
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		return nil, l.git(s, args...).fail(err, stderr)
	}
	return patches, nil
}
