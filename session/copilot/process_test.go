package copilot_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/copilot"
	"github.com/pilotdesk/pilotdesk/session/copilot/internal/fakecli"
)

// The Copilot CLI's process: its handshake and start, frames it cannot
// read, a crash and the resume after it, a Host that holds its stream back,
// and nothing left running after it.

func TestMalformedFramesAreSurvived(t *testing.T) {
	opts, fake := newFake(t, fakecli.EnvBigFrame+"=300000")
	opts.MaxFrameSize = 200000
	a := newAgent(t, opts)
	h := newHost("act")
	s := open(t, a, "conv-garbage", session.OpenOptions{}, h)
	if err := run(t, s, "garbage"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	events := h.Events()
	if got := testsupport.Text(events); got != "before after" {
		t.Errorf("text = %q, want the two deltas around the garbage and not the oversized one", got)
	}
	if m := testsupport.OfType[session.Message](events); len(m) != 1 || m[0].Content != "before after" {
		t.Errorf("messages = %+v", m)
	}
	// Same process afterwards.
	if err := run(t, s, "more"); err != nil {
		t.Fatal(err)
	}
	if pids := fake.pids(); len(pids) != 1 {
		t.Errorf("%d CLI processes, want 1", len(pids))
	}
}

func TestCrashMidTurnThenResume(t *testing.T) {
	opts, fake := newFake(t)
	a := newAgent(t, opts)
	h := newHost("act")
	s := open(t, a, "conv-crash", session.OpenOptions{}, h)

	err := run(t, s, "crash")
	if err == nil || !strings.Contains(err.Error(), "exited unexpectedly") || !strings.Contains(err.Error(), "crashing on purpose") {
		t.Fatalf("Run = %v, want the crash with the CLI's last words", err)
	}
	if got := testsupport.Text(h.Events()); got != "partial " {
		t.Errorf("text before the crash = %q", got)
	}
	first := fake.pids()
	testsupport.WaitGone(t, first[0], wait)

	// The next turn starts a new CLI and resumes the session: the fake's
	// turn counter (its stored context) goes on.
	if err := run(t, s, "hello"); err != nil {
		t.Fatalf("Run after the crash: %v", err)
	}
	if got := testsupport.Text(h.Events()); !strings.HasSuffix(got, "turn 2: echo hello") {
		t.Errorf("text = %q, want the resumed session's turn 2", got)
	}
	pids := fake.pids()
	if len(pids) != 2 {
		t.Fatalf("pids = %v, want 2 processes", pids)
	}
	var second []string
	for _, e := range fake.requests() {
		if e.PID == pids[1] {
			second = append(second, e.Method)
		}
	}
	if !slices.Equal(second[:4], []string{"argv", "connect", "session.resume", "session.send"}) {
		t.Errorf("second process got %v, want connect, resume, send", second)
	}
	if n := count(fake.methods(), "session.create"); n != 1 {
		t.Errorf("session.create sent %d times, want 1 (never recreated)", n)
	}
}

func TestNothingOutlivesTheCLI(t *testing.T) {
	opts, fake := newFake(t)
	a := newAgent(t, opts)
	s := open(t, a, "conv-orphan", session.OpenOptions{}, newHost("act"))
	if err := run(t, s, "orphan"); err == nil {
		t.Fatal("the turn survived the CLI's exit")
	}
	children := fake.find("child")
	if len(children) != 1 {
		t.Fatalf("child log = %+v", children)
	}
	var pid int
	if err := json.Unmarshal(children[0].Params, &pid); err != nil || pid <= 0 {
		t.Fatalf("child pid %s", children[0].Params)
	}
	testsupport.WaitGone(t, pid, wait)
}

func TestUnreadableStreamIsACrash(t *testing.T) {
	opts, fake := newFake(t)
	opts.StopGrace = 300 * time.Millisecond
	a := newAgent(t, opts)
	h := newHost("act")
	s := open(t, a, "conv-fatal", session.OpenOptions{}, h)
	err := run(t, s, "fatal")
	if err == nil || !strings.Contains(err.Error(), "unreadable") {
		t.Fatalf("Run = %v, want an unreadable-output error", err)
	}
	// That fake ignores EOF and SIGTERM: only the group SIGKILL ends it.
	testsupport.WaitGone(t, fake.pids()[0], wait)
	if err := run(t, s, "hello"); err != nil {
		t.Fatalf("Run after: %v", err)
	}
	if got := testsupport.Text(h.Events()); !strings.HasSuffix(got, "turn 2: echo hello") {
		t.Errorf("text = %q", got)
	}
}

func TestHandshakeProblems(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	t.Run("protocol mismatch", func(t *testing.T) {
		opts, _ := newFake(t, fakecli.EnvProtocol+"=2")
		err := copilot.Probe(ctx, opts)
		if !errors.Is(err, session.ErrProtocolMismatch) || !strings.Contains(err.Error(), "protocol version 2") || !strings.Contains(err.Error(), "version 3") {
			t.Errorf("Probe = %v", err)
		}
		a := newAgent(t, opts)
		if _, err := a.Open(ctx, "c", session.OpenOptions{}, newHost("act")); !errors.Is(err, session.ErrProtocolMismatch) {
			t.Errorf("Open = %v", err)
		}
	})
	t.Run("ping fallback", func(t *testing.T) {
		opts, fake := newFake(t, fakecli.EnvNoConnect+"=1")
		a := newAgent(t, opts)
		s := open(t, a, "c", session.OpenOptions{}, newHost("act"))
		if err := run(t, s, "x"); err != nil {
			t.Fatal(err)
		}
		if got := fake.methods()[1:4]; !slices.Equal(got, []string{"connect", "ping", "session.create"}) {
			t.Errorf("requests = %v", got)
		}
	})
	t.Run("signed out", func(t *testing.T) {
		opts, fake := newFake(t, fakecli.EnvSignedOut+"=1")
		err := copilot.Probe(ctx, opts)
		if !errors.Is(err, session.ErrNotSignedIn) || !strings.Contains(err.Error(), "/login") || !strings.Contains(err.Error(), "--provider-url") {
			t.Errorf("Probe = %v", err)
		}
		testsupport.WaitGone(t, fake.pids()[0], wait) // Probe leaves nothing running
		opts.ProviderURL = "http://127.0.0.1:9/v1"
		if err := copilot.Probe(ctx, opts); err != nil {
			t.Errorf("Probe with a provider URL = %v", err)
		}
	})
	t.Run("signed in", func(t *testing.T) {
		opts, fake := newFake(t)
		if err := copilot.Probe(ctx, opts); err != nil {
			t.Errorf("Probe = %v", err)
		}
		if got := fake.methods(); !slices.Equal(got, []string{"argv", "connect", "auth.getStatus"}) {
			t.Errorf("requests = %v", got)
		}
		testsupport.WaitGone(t, fake.pids()[0], wait)
	})
	t.Run("exits at start", func(t *testing.T) {
		opts, _ := newFake(t, fakecli.EnvExitEarly+"=1")
		err := copilot.Probe(ctx, opts)
		if err == nil || !strings.Contains(err.Error(), "cannot start (on purpose)") {
			t.Errorf("Probe = %v, want the CLI's own words", err)
		}
	})
	t.Run("not found", func(t *testing.T) {
		opts := copilot.Options{Path: "/nonexistent/bin/copilot"}
		err := copilot.Probe(ctx, opts)
		if !errors.Is(err, session.ErrAgentNotFound) || !strings.Contains(err.Error(), "npm install -g @github/copilot") {
			t.Errorf("Probe = %v", err)
		}
		a := newAgent(t, opts)
		if _, err := a.Open(ctx, "c", session.OpenOptions{}, newHost("act")); !errors.Is(err, session.ErrAgentNotFound) {
			t.Errorf("Open = %v", err)
		}
		t.Setenv("PATH", t.TempDir())
		if err := copilot.Probe(ctx, copilot.Options{}); !errors.Is(err, session.ErrAgentNotFound) || !strings.Contains(err.Error(), "PATH") {
			t.Errorf("Probe with no copilot on PATH = %v", err)
		}
		if runtime.GOOS != "windows" {
			// A file that is not executable cannot run either (as the
			// ACP backend says of its agent), but it is there: the error
			// names it and says why, rather than to install the CLI.
			plain := filepath.Join(t.TempDir(), "copilot")
			if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := copilot.Probe(ctx, copilot.Options{Path: plain})
			if !errors.Is(err, session.ErrAgentNotExecutable) || errors.Is(err, session.ErrAgentNotFound) ||
				!strings.Contains(err.Error(), "permission denied on "+plain) || !strings.Contains(err.Error(), "--copilot-path") ||
				strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "npm install") {
				t.Errorf("Probe of a file that is not executable = %v", err)
			}
		}
	})
	t.Run("bad provider type", func(t *testing.T) {
		if _, err := copilot.New(copilot.Options{ProviderType: "llama"}); err == nil {
			t.Error("New accepted provider type llama")
		}
	})
}

// A Host slower than the CLI (the relay's store, say) holds the stream
// back: the session's queue fills to its bound and stays there, the reader
// waits (and so does the CLI's writer), and once the Host catches up every
// event arrives, in order; none is dropped.
func TestSlowHostHoldsTheStreamBack(t *testing.T) {
	opts, _ := newFake(t)
	a := newAgent(t, opts)
	h := newHost("act")
	gate := make(chan struct{})
	var once sync.Once
	h.OnEmit = func(_ *testHost, e session.Event) {
		if _, ok := e.(session.Delta); ok {
			once.Do(func() { <-gate }) // the first delta stalls the Host
		}
	}
	s := open(t, a, "conv-flood", session.OpenOptions{}, h)
	n := 4 * copilot.EventQueueLen
	done := make(chan error, 1)
	go func() { done <- run(t, s, fmt.Sprintf("flood %d", n)) }()

	deadline := time.Now().Add(wait)
	for copilot.QueuedEvents(s) < copilot.EventQueueLen {
		if time.Now().After(deadline) {
			t.Fatalf("the queue holds %d events, never its bound %d", copilot.QueuedEvents(s), copilot.EventQueueLen)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for range 20 {
		if q := copilot.QueuedEvents(s); q > copilot.EventQueueLen {
			t.Fatalf("the queue grew past its bound: %d > %d", q, copilot.EventQueueLen)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the turn ended (%v) while the Host was stalled", err)
	default:
	}
	close(gate)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(wait):
		t.Fatal("the turn did not end once the Host caught up")
	}
	deltas := testsupport.OfType[session.Delta](h.Events())
	if len(deltas) != n {
		t.Fatalf("%d deltas arrived, want %d", len(deltas), n)
	}
	for i, d := range deltas {
		if d.Content != fmt.Sprintf("%d ", i) {
			t.Fatalf("delta %d is %q, want %q", i, d.Content, fmt.Sprintf("%d ", i))
		}
	}
}

// TestStartKeepsItsCLI: the CLI that Start checks is the one the first turn
// uses: one start per relay, not two.
func TestStartKeepsItsCLI(t *testing.T) {
	opts, fake := newFake(t)
	a, err := copilot.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	s := open(t, a, "conv-start", session.OpenOptions{}, newHost("act"))
	if err := run(t, s, "hello"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if pids := fake.pids(); len(pids) != 1 {
		t.Fatalf("the CLI started %d times (pids %v), want once", len(pids), pids)
	}
}
