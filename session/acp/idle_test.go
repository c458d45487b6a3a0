package acp_test

import (
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/session"
)

// waitLogged waits until the fake logged n requests of method.
func (f *fake) waitLogged(method string, n int) int {
	f.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		got := len(f.find(method))
		if got >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestIdleSessionSleeps: a conversation idle for IdleClose has its agent
// session closed, and the next turn loads the same session again: the
// agent's context (its turn count) goes on.
func TestIdleSessionSleeps(t *testing.T) {
	t.Parallel()
	opts, f := newFake(t)
	opts.IdleClose = 50 * time.Millisecond
	h := newHost("act")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	if err := run(t, s, "echo one"); err != nil {
		t.Fatal(err)
	}
	if n := f.waitLogged("session/close", 1); n != 1 {
		t.Fatalf("session/close sent %d times after the idle time, want 1", n)
	}
	n := len(h.Events())
	if err := run(t, s, "echo two"); err != nil {
		t.Fatal(err)
	}
	if got := testsupport.Text(h.Since(n)); got != "turn 2: echo two" {
		t.Errorf("the turn after sleeping: %q, want the same session's second turn", got)
	}
	if loads := f.find("session/load"); len(loads) != 1 || loads[0].Session != f.find("session/close")[0].Session {
		t.Errorf("session/load %+v, want the conversation's session loaded once", loads)
	}
}

// TestMaxOpenSessions: past MaxOpen awake sessions the least recently used
// idle one sleeps, and wakes on its next turn.
func TestMaxOpenSessions(t *testing.T) {
	t.Parallel()
	opts, f := newFake(t)
	opts.IdleClose = -1
	opts.MaxOpen = 1
	a := newAgent(t, opts)
	h1, h2 := newHost("act"), newHost("act")
	s1 := open(t, a, "c1", session.OpenOptions{}, h1)
	if err := run(t, s1, "echo one"); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, a, "c2", session.OpenOptions{}, h2)
	if err := run(t, s2, "echo one"); err != nil {
		t.Fatal(err)
	}
	closes := f.find("session/close")
	if len(closes) != 1 {
		t.Fatalf("session/close sent %d times, want c1's session closed once c2's was used", len(closes))
	}
	n := len(h1.Events())
	if err := run(t, s1, "echo two"); err != nil {
		t.Fatal(err)
	}
	if got := testsupport.Text(h1.Since(n)); got != "turn 2: echo two" {
		t.Errorf("c1 after sleeping: %q, want its session's second turn", got)
	}
	if loads := f.find("session/load"); len(loads) != 1 || loads[0].Session != closes[0].Session {
		t.Errorf("session/load %+v, want the session closed first loaded again", loads)
	}
	if again := f.find("session/close"); len(again) != 2 || again[1].Session == closes[0].Session {
		t.Errorf("session/close %+v, want c2's closed once c1 woke", again)
	}
}
