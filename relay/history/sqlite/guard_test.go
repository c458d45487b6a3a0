package sqlite

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// writeSome stores a conversation with a few events.
func writeSome(t *testing.T, s *Store, conv string, n int64) {
	t.Helper()
	mustWrite(t, s, history.Batch{
		Conversations: []history.Conversation{{ID: conv, Title: "t", Mode: "act", CreatedAt: t0, UpdatedAt: t0, LastSeq: n}},
		Events:        testEvents(conv, 1, n),
	})
}

// A store marked as having had events sent unstored gets a new epoch at
// its next open, keeps its history, and keeps that new epoch afterwards.
func TestGuardMarkedGivesNewEpoch(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	old := s.Epoch()
	writeSome(t, s, "c", 3)
	if err := s.MarkUnstored(); err != nil {
		t.Fatalf("MarkUnstored: %v", err)
	}
	mustClose(t, s)

	s = openStore(t, dir, Options{})
	renewed := s.Epoch()
	if renewed == old || renewed == "" {
		t.Fatalf("epoch %q after a marked run, want a new one (was %q)", renewed, old)
	}
	if got := allEvents(t, s, "c"); len(got) != 3 {
		t.Fatalf("%d events after the new epoch, want the 3 stored", len(got))
	}
	mustClose(t, s)

	s = openStore(t, dir, Options{})
	defer mustClose(t, s)
	if s.Epoch() != renewed {
		t.Fatalf("epoch %q at the open after, want %q kept", s.Epoch(), renewed)
	}
}

// Marked and then cleared (every event sent was stored after all), or
// never marked: the epoch stays.
func TestGuardClearedKeepsEpoch(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	old := s.Epoch()
	if err := s.MarkUnstored(); err != nil {
		t.Fatalf("MarkUnstored: %v", err)
	}
	if err := s.ClearUnstored(); err != nil {
		t.Fatalf("ClearUnstored: %v", err)
	}
	mustClose(t, s)
	for range 2 {
		s = openStore(t, dir, Options{})
		if s.Epoch() != old {
			t.Fatalf("epoch %q, want %q kept", s.Epoch(), old)
		}
		mustClose(t, s)
	}
}

// The guard is a whole block on disk from the first open on, so that
// marking it overwrites in place and needs no new space; it is private.
func TestGuardFileIsAllocated(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	path := filepath.Join(dir, guardName)
	check := func(want []byte) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != guardSize || fi.Mode().Perm() != 0o600 {
			t.Fatalf("guard %v, %d bytes; want 0600, %d bytes", fi.Mode(), fi.Size(), guardSize)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want) {
			t.Fatalf("guard holds %q", bytes.TrimRight(b, "\x00"))
		}
	}
	check(guardClean)
	if err := s.MarkUnstored(); err != nil {
		t.Fatal(err)
	}
	check(guardUnstored)
	if err := s.ClearUnstored(); err != nil {
		t.Fatal(err)
	}
	check(guardClean)
	mustClose(t, s)
	if err := s.MarkUnstored(); err == nil {
		t.Fatal("MarkUnstored after Close succeeded")
	}
}

// A guard that is not as pilotdesk writes it (cut short, or changed by
// hand) counts as marked: the worst it costs is a replay.
func TestGuardDamagedGivesNewEpoch(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	old := s.Epoch()
	mustClose(t, s)
	path := filepath.Join(dir, guardName)
	if err := os.WriteFile(path, []byte("pilotdesk hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, Options{})
	defer mustClose(t, s)
	if s.Epoch() == old {
		t.Fatal("a damaged guard kept the epoch")
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, guardClean) {
		t.Fatalf("the guard was not made anew: %q, %v", bytes.TrimRight(b, "\x00"), err)
	}
}

// A data dir of an older pilotdesk has no guard: it gets a clean one, and
// the epoch stays.
func TestGuardMissingIsCreated(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	old := s.Epoch()
	mustClose(t, s)
	if err := os.Remove(filepath.Join(dir, guardName)); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, Options{})
	defer mustClose(t, s)
	if s.Epoch() != old {
		t.Fatal("a missing guard changed the epoch")
	}
	if fi, err := os.Stat(filepath.Join(dir, guardName)); err != nil || fi.Size() != guardSize {
		t.Fatalf("guard not created: %v", err)
	}
}
