// Command checkpointbench measures the relay's snapshots of a turn's
// folder (relay/checkpoint) against git's own `git stash create` on the
// same tree, in the same run, as ratios against their targets
// (docs/checkpoints.md, Speed; `make bench` runs it):
//
//   - a repository of 10,000 files with 10 changed: a snapshot costs at
//     most 1.5x `git stash create`;
//   - a small folder: the snapshot a turn takes before its agent starts
//     adds well under 50 ms;
//   - a conversation of 200 checkpointed turns opens (subscribe from seq 0,
//     its history up to copilot:subscribed) as fast as the same history
//     without its snapshots, within 10% (open.go).
//
// It exits non-zero when a target is missed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/checkpoint"
)

func main() {
	files := flag.Int("files", 10000, "files in the generated repository")
	changed := flag.Int("changed", 10, "files changed before each snapshot")
	runs := flag.Int("runs", 15, "measured runs of each")
	turns := flag.Int("turns", 200, "checkpointed turns of the conversation opened")
	flag.Parse()
	if err := run(*files, *changed, *runs, *turns); err != nil {
		fmt.Fprintln(os.Stderr, "checkpointbench:", err)
		os.Exit(1)
	}
}

func git(dir string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %w: %s", args, err, out)
	}
	return nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func run(nFiles, nChanged, runs, turns int) error {
	root, err := os.MkdirTemp("", "checkpointbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	repo := filepath.Join(root, "repo")
	for i := range nFiles {
		p := filepath.Join(repo, fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("file%05d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, "package p\n\n// file %d\nvar X%d = %d\n", i, i, i), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "generated"}} {
		if err := git(repo, args...); err != nil {
			return err
		}
	}
	store, err := checkpoint.New(filepath.Join(root, "data"))
	if err != nil {
		return err
	}
	ctx := context.Background()
	change := func(round int) error {
		for i := range nChanged {
			p := filepath.Join(repo, fmt.Sprintf("pkg%03d", i), fmt.Sprintf("file%05d.go", i*100))
			if err := os.WriteFile(p, fmt.Appendf(nil, "package p\n\n// changed in round %d\nvar X = %d\n", round, round), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	// The first snapshot of a folder makes its private index; the turns'
	// snapshots are the later ones.
	if _, err := store.Snapshot(ctx, repo, "bench"); err != nil {
		return err
	}
	var snap, stash []time.Duration
	for round := range runs {
		if err := change(round); err != nil {
			return err
		}
		start := time.Now()
		if err := git(repo, "stash", "create"); err != nil {
			return err
		}
		stash = append(stash, time.Since(start))
		start = time.Now()
		if _, err := store.Snapshot(ctx, repo, "bench"); err != nil {
			return err
		}
		snap = append(snap, time.Since(start))
	}
	ratio := float64(median(snap)) / float64(median(stash))
	fmt.Printf("snapshot of %d files, %d changed: %v median; git stash create: %v median; ratio %.2f (target <= 1.5)\n",
		nFiles, nChanged, median(snap).Round(time.Millisecond), median(stash).Round(time.Millisecond), ratio)

	small := filepath.Join(root, "small")
	for i := range 20 {
		if err := os.MkdirAll(small, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(small, fmt.Sprintf("f%d.txt", i)), []byte("x\n"), 0o644); err != nil {
			return err
		}
	}
	if _, err := store.Snapshot(ctx, small, "bench"); err != nil {
		return err
	}
	var turn []time.Duration
	for range runs {
		start := time.Now()
		if _, err := store.Snapshot(ctx, small, "bench"); err != nil {
			return err
		}
		turn = append(turn, time.Since(start))
	}
	fmt.Printf("a turn's first snapshot of a small folder: %v median (target < 50ms)\n", median(turn).Round(time.Millisecond))
	with, without, frames, err := openBench(root, turns, runs)
	if err != nil {
		return fmt.Errorf("opening a conversation of %d checkpointed turns: %w", turns, err)
	}
	openRatio := float64(with) / float64(without)
	fmt.Printf("opening a conversation of %d checkpointed turns (%d frames): %v median with its snapshots, %v without; ratio %.2f (target <= 1.10)\n",
		turns, frames, with.Round(time.Microsecond*100), without.Round(time.Microsecond*100), openRatio)
	if ratio > 1.5 {
		return fmt.Errorf("the snapshot costs %.2fx git stash create, over 1.5x", ratio)
	}
	if median(turn) >= 50*time.Millisecond {
		return fmt.Errorf("a small folder's snapshot takes %v, not under 50ms", median(turn))
	}
	if openRatio > 1.10 {
		return fmt.Errorf("a conversation of %d checkpointed turns opens in %.2fx the time without its snapshots, over 1.10x", turns, openRatio)
	}
	return nil
}
