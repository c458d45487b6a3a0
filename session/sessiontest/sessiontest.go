// Package sessiontest is the conformance suite of session.Agent. Every
// backend (the scripted agent, the Copilot CLI, ACP agents) runs it against
// a fake of its agent, so the relay can rely on one contract whatever runs a
// conversation: a reply is streamed and then sent whole, a tool asks the
// Host and obeys its decision, a denial in Plan never fails the turn, an
// abort ends the turn at once and leaves the session usable, a failed turn
// is an error and the next one works, sessions of one agent stay apart, and
// Close ends what Open started.
//
// A backend's test calls Run with a Backend that says how to make its agent
// and which prompts play each kind of turn on its fake.
package sessiontest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/session"
)

// Backend describes one backend to the suite.
type Backend struct {
	// New returns a new Agent whose sessions answer the prompts below. The
	// suite closes it (Close is called once), and calls New once a case.
	New func(t *testing.T) session.Agent
	// Prompts are the turns the suite plays.
	Prompts Prompts
	// Wait bounds every wait of the suite; zero means a minute (the
	// suite's turns take milliseconds on an idle machine: the bound only
	// keeps a hung backend from hanging the test binary).
	Wait time.Duration
}

// Prompts are the prompts that play each kind of turn on a backend's fake.
type Prompts struct {
	// Reply is answered with text and no tool.
	Reply string
	// Tool makes the agent ask permission for at least one tool and run it
	// when allowed.
	Tool string
	// ToolFile, when not empty, is the name of a file that the Tool turn
	// creates in the session's folder (OpenOptions.WorkDir) when allowed;
	// the suite then checks that Act makes it there and Plan does not.
	ToolFile string
	// Hang streams some text, then waits until the turn is aborted.
	Hang string
	// Fail makes the agent report that the turn failed.
	Fail string
}

// Run runs every case of the suite on b, each as a subtest.
func Run(t *testing.T, b Backend) {
	t.Helper()
	if b.Wait == 0 {
		b.Wait = time.Minute
	}
	s := suite{b: b}
	t.Run("Reply", s.reply)
	t.Run("ToolInAct", func(t *testing.T) { s.tool(t, "act") })
	t.Run("ToolInPlan", func(t *testing.T) { s.tool(t, "plan") })
	t.Run("Abort", s.abort)
	t.Run("Failure", s.failure)
	t.Run("SessionsApart", s.sessionsApart)
	t.Run("Close", s.close)
}

type suite struct{ b Backend }

// agent returns a new agent, closed when the test ends unless the test
// closes it first.
func (s suite) agent(t *testing.T) session.Agent {
	t.Helper()
	a := s.b.New(t)
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { a.Close() }) })
	return closeOnce{Agent: a, once: &once}
}

// closeOnce lets a case close its agent while the cleanup still guards
// the cases that do not: Agent.Close is called once.
type closeOnce struct {
	session.Agent
	once *sync.Once
}

func (c closeOnce) Close() error {
	var err error
	c.once.Do(func() { err = c.Agent.Close() })
	return err
}

// open opens a session of conv in a new folder, which it returns.
func (s suite) open(t *testing.T, a session.Agent, conv string, h session.Host) (session.Session, string) {
	t.Helper()
	dir := t.TempDir()
	sess := testsupport.Open(t, s.b.Wait, a, conv, session.OpenOptions{WorkDir: dir}, h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.b.Wait)
		defer cancel()
		sess.Close(ctx)
	})
	return sess, dir
}

// reply: a reply is deltas, then at most one whole message per message id
// that is exactly their concatenation, and the turn completes.
func (s suite) reply(t *testing.T) {
	a := s.agent(t)
	h := testsupport.NewHost("act")
	sess, _ := s.open(t, a, "reply", h)
	if err := testsupport.Run(t, s.b.Wait, sess, s.b.Prompts.Reply); err != nil {
		t.Fatalf("a reply turn failed: %v\nevents:\n%s", err, testsupport.Describe(h.Events()))
	}
	events := h.Events()
	if testsupport.Text(events) == "" {
		t.Fatalf("a reply turn said nothing; events:\n%s", testsupport.Describe(events))
	}
	checkMessages(t, events)
	if p := h.Permissions(); len(p) != 0 {
		t.Errorf("a reply turn asked for %d permissions", len(p))
	}
}

// checkMessages checks that every Message is the concatenation of the
// deltas of its message id that came before it, and comes once.
func checkMessages(t *testing.T, events []session.Event) {
	t.Helper()
	text := map[string]*strings.Builder{}
	sent := map[string]bool{}
	for _, e := range events {
		switch v := e.(type) {
		case session.Delta:
			if sent[v.MessageID] {
				t.Errorf("a delta %q of message %q after the message was sent whole", v.Content, v.MessageID)
			}
			if text[v.MessageID] == nil {
				text[v.MessageID] = &strings.Builder{}
			}
			text[v.MessageID].WriteString(v.Content)
		case session.Message:
			if sent[v.MessageID] {
				t.Errorf("message %q sent whole twice", v.MessageID)
			}
			sent[v.MessageID] = true
			var want string
			if b := text[v.MessageID]; b != nil {
				want = b.String()
			}
			if v.Content != want {
				t.Errorf("message %q is %q, its deltas said %q", v.MessageID, v.Content, want)
			}
		}
	}
}

// tool: the agent asks the Host before it runs a tool, and obeys: in Act
// the tool runs and ends well; in Plan it is denied, the agent does not
// carry it out, and the turn still completes (a denial is not a failure).
func (s suite) tool(t *testing.T, mode string) {
	a := s.agent(t)
	h := testsupport.NewHost(mode)
	sess, dir := s.open(t, a, "tool-"+mode, h)
	err := testsupport.Run(t, s.b.Wait, sess, s.b.Prompts.Tool)
	events := h.Events()
	if err != nil {
		t.Fatalf("a tool turn in %s failed: %v\nevents:\n%s", mode, err, testsupport.Describe(events))
	}
	perms := h.Permissions()
	if len(perms) == 0 {
		t.Fatalf("a tool turn in %s asked no permission; events:\n%s", mode, testsupport.Describe(events))
	}
	started := map[string]bool{}
	ended := map[string]session.ToolEnd{}
	for _, e := range events {
		switch v := e.(type) {
		case session.ToolStart:
			if v.ToolCallID == "" {
				t.Errorf("a tool started without an id: %+v", v)
			}
			started[v.ToolCallID] = true
		case session.ToolEnd:
			if !started[v.ToolCallID] {
				t.Errorf("tool %q ended before it started", v.ToolCallID)
			}
			if _, twice := ended[v.ToolCallID]; twice {
				t.Errorf("tool %q ended twice", v.ToolCallID)
			}
			ended[v.ToolCallID] = v
		}
	}
	for _, p := range perms {
		end, ok := ended[p.ToolCallID]
		if !ok {
			t.Errorf("the tool %q that asked permission never ended; events:\n%s", p.ToolCallID, testsupport.Describe(events))
			continue
		}
		switch mode {
		case "act":
			if !end.Success || end.Denied {
				t.Errorf("in Act, tool %q ended success=%v denied=%v, want success", p.ToolCallID, end.Success, end.Denied)
			}
		case "plan":
			if end.Success || !end.Denied {
				t.Errorf("in Plan, tool %q ended success=%v denied=%v, want denied", p.ToolCallID, end.Success, end.Denied)
			}
		}
	}
	for id := range started {
		if _, ok := ended[id]; !ok {
			t.Errorf("tool %q started and never ended", id)
		}
	}
	if f := s.b.Prompts.ToolFile; f != "" {
		_, statErr := os.Stat(filepath.Join(dir, f))
		switch {
		case mode == "act" && statErr != nil:
			t.Errorf("in Act the tool did not make %s in the session's folder: %v", f, statErr)
		case mode == "plan" && statErr == nil:
			t.Errorf("in Plan the denied tool made %s all the same", f)
		}
	}
	checkMessages(t, events)
}

// abort: cancelling a turn's context ends Run promptly with ctx's error,
// and the session's next turn works.
func (s suite) abort(t *testing.T) {
	a := s.agent(t)
	h := testsupport.NewHost("act")
	sess, _ := s.open(t, a, "abort", h)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sess.Run(ctx, session.Turn{Prompt: s.b.Prompts.Hang}) }()
	h.WaitFor(t, s.b.Wait, "the hanging turn's first words", func(events []session.Event) bool {
		return testsupport.Text(events) != ""
	})
	select {
	case err := <-done:
		t.Fatalf("the hanging turn ended by itself: %v", err)
	default:
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("an aborted turn returned %v, want context.Canceled", err)
		}
	case <-time.After(s.b.Wait):
		t.Fatalf("an aborted turn did not end within %s", s.b.Wait)
	}
	s.nextTurnWorks(t, sess, h, "an abort")
}

// nextTurnWorks runs a reply turn on sess and checks it completes with
// words of its own.
func (s suite) nextTurnWorks(t *testing.T, sess session.Session, h *testsupport.Host, after string) {
	t.Helper()
	n := len(h.Events())
	if err := testsupport.Run(t, s.b.Wait, sess, s.b.Prompts.Reply); err != nil {
		t.Fatalf("the turn after %s failed: %v\nevents:\n%s", after, err, testsupport.Describe(h.Since(n)))
	}
	if testsupport.Text(h.Since(n)) == "" {
		t.Fatalf("the turn after %s said nothing; events:\n%s", after, testsupport.Describe(h.Since(n)))
	}
}

// failure: a turn the agent reports as failed returns an error that is
// not a context's, and the session's next turn works.
func (s suite) failure(t *testing.T) {
	a := s.agent(t)
	h := testsupport.NewHost("act")
	sess, _ := s.open(t, a, "failure", h)
	err := testsupport.Run(t, s.b.Wait, sess, s.b.Prompts.Fail)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a failing turn returned %v, want the agent's error; events:\n%s", err, testsupport.Describe(h.Events()))
	}
	s.nextTurnWorks(t, sess, h, "a failure")
}

// sessionsApart: two sessions of one agent play turns at the same time,
// and each Host hears only its own: one reply each, whole.
func (s suite) sessionsApart(t *testing.T) {
	a := s.agent(t)
	hosts := []*testsupport.Host{testsupport.NewHost("act"), testsupport.NewHost("act")}
	var sessions []session.Session
	for i, h := range hosts {
		sess, _ := s.open(t, a, fmt.Sprintf("apart-%d", i), h)
		sessions = append(sessions, sess)
	}
	errs := make(chan error, len(sessions))
	for _, sess := range sessions {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), s.b.Wait)
			defer cancel()
			errs <- sess.Run(ctx, session.Turn{Prompt: s.b.Prompts.Reply})
		}()
	}
	for range sessions {
		if err := <-errs; err != nil {
			t.Fatalf("a turn of two at once failed: %v", err)
		}
	}
	// One host alone plays the same turn, for the number of messages one
	// turn makes on this backend.
	alone := testsupport.NewHost("act")
	sess, _ := s.open(t, a, "alone", alone)
	if err := testsupport.Run(t, s.b.Wait, sess, s.b.Prompts.Reply); err != nil {
		t.Fatal(err)
	}
	want := len(testsupport.OfType[session.Message](alone.Events()))
	for i, h := range hosts {
		events := h.Events()
		if got := len(testsupport.OfType[session.Message](events)); got != want {
			t.Errorf("session %d heard %d whole messages, one turn makes %d; events:\n%s", i, got, want, testsupport.Describe(events))
		}
		if testsupport.Text(events) == "" {
			t.Errorf("session %d heard no words", i)
		}
		checkMessages(t, events)
	}
}

// close: Session.Close returns, a closed agent opens nothing more (an
// error, session.ErrClosed, not a hang or a panic), and closing the agent
// ends its sessions (their turns fail with session.ErrClosed).
func (s suite) close(t *testing.T) {
	a := s.agent(t)
	h := testsupport.NewHost("act")
	sess := testsupport.Open(t, s.b.Wait, a, "close", session.OpenOptions{WorkDir: t.TempDir()}, h)
	if err := testsupport.Run(t, s.b.Wait, sess, s.b.Prompts.Reply); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.b.Wait)
	defer cancel()
	if err := sess.Close(ctx); err != nil {
		t.Errorf("Session.Close: %v", err)
	}
	other := testsupport.Open(t, s.b.Wait, a, "close-other", session.OpenOptions{WorkDir: t.TempDir()}, testsupport.NewHost("act"))
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Agent.Close: %v", err)
		}
	case <-time.After(s.b.Wait):
		t.Fatalf("Agent.Close did not return within %s", s.b.Wait)
	}
	// Both say session.ErrClosed, so the relay tells a closed backend
	// apart the same way whatever the backend.
	if _, err := a.Open(ctx, "after-close", session.OpenOptions{WorkDir: t.TempDir()}, testsupport.NewHost("act")); !errors.Is(err, session.ErrClosed) {
		t.Errorf("a closed agent's Open: %v, want session.ErrClosed", err)
	}
	if err := testsupport.Run(t, s.b.Wait, other, s.b.Prompts.Reply); !errors.Is(err, session.ErrClosed) {
		t.Errorf("a turn of a closed agent's session: %v, want session.ErrClosed", err)
	}
}
