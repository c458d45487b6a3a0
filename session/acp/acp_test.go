package acp_test

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/pilotdesk/pilotdesk/session/acp"
	"github.com/pilotdesk/pilotdesk/session/acp/internal/fakeagent"
)

func TestStreamingAndUsage(t *testing.T) {
	opts, f := newFake(t)
	a := newAgent(t, opts)
	h := newHost("act")
	s := open(t, a, "c1", session.OpenOptions{}, h)
	if err := run(t, s, "hello"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	events := h.Events()
	want := []string{"delta:Hello", "delta: from", "delta: the fake.", "message:Hello from the fake.", "usage:100/10"}
	if got := shape(events); !slices.Equal(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
	// One message id, made by the backend, for the deltas and the message.
	id := events[0].(session.Delta).MessageID
	for _, e := range testsupport.OfType[session.Delta](events) {
		if e.MessageID != id || id == "" {
			t.Errorf("delta message ids %q and %q", id, e.MessageID)
		}
	}
	if m := testsupport.OfType[session.Message](events)[0]; m.MessageID != id {
		t.Errorf("message id %q, deltas %q", m.MessageID, id)
	}
	if u := testsupport.OfType[session.Usage](events)[0]; deref(u.CacheReadTokens) != 5 {
		t.Errorf("cache read tokens = %d, want 5", deref(u.CacheReadTokens))
	}

	// The handshake offers no fs and no terminal, and the session runs in
	// the work dir.
	var init struct {
		ClientCapabilities struct {
			Fs       map[string]bool `json:"fs"`
			Terminal bool            `json:"terminal"`
		} `json:"clientCapabilities"`
		ClientInfo struct{ Name string } `json:"clientInfo"`
	}
	if err := json.Unmarshal(f.find("initialize")[0].Params, &init); err != nil {
		t.Fatal(err)
	}
	if init.ClientCapabilities.Fs["readTextFile"] || init.ClientCapabilities.Fs["writeTextFile"] || init.ClientCapabilities.Terminal || init.ClientInfo.Name != "pilotdesk" {
		t.Errorf("initialize params = %s", f.find("initialize")[0].Params)
	}
	var nw struct{ Cwd string }
	json.Unmarshal(f.find("session/new")[0].Params, &nw)
	if nw.Cwd != f.workDir {
		t.Errorf("session/new cwd = %q, want %q", nw.Cwd, f.workDir)
	}
}

func TestAgentMessageIDsSplitMessages(t *testing.T) {
	opts, _ := newFake(t)
	a := newAgent(t, opts)
	h := newHost("act")
	s := open(t, a, "c1", session.OpenOptions{}, h)
	if err := run(t, s, "messages"); err != nil {
		t.Fatal(err)
	}
	msgs := testsupport.OfType[session.Message](h.Events())
	if len(msgs) != 2 || msgs[0].Content != "First message." || msgs[1].Content != "Second message." || msgs[0].MessageID == msgs[1].MessageID {
		t.Fatalf("messages = %+v", msgs)
	}
}

func TestToolInActIsAllowedOnce(t *testing.T) {
	opts, f := newFake(t)
	a := newAgent(t, opts)
	h := newHost("act")
	s := open(t, a, "c1", session.OpenOptions{}, h)
	if err := run(t, s, "tool act.txt"); err != nil {
		t.Fatal(err)
	}
	want := []string{"delta:I will create act.txt.", "message:I will create act.txt.", "start:t1:Create act.txt", "end:t1:ok", "delta:Done.", "message:Done.", "usage:100/10"}
	events := h.Events()
	if got := shape(events); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	if got := f.waitOutcomes(1); !slices.Equal(got, []string{"opt-allow_once"}) {
		t.Errorf("permission answers = %q, want the allow-once option", got)
	}
	if _, err := os.Stat(filepath.Join(f.workDir, "act.txt")); err != nil {
		t.Errorf("the allowed tool did not run: %v", err)
	}
	start := testsupport.OfType[session.ToolStart](events)[0]
	if !strings.Contains(string(start.Arguments), `"command":"touch act.txt"`) {
		t.Errorf("tool arguments = %s", start.Arguments)
	}
	if end := testsupport.OfType[session.ToolEnd](events)[0]; end.Result != "created act.txt" {
		t.Errorf("tool result = %q", end.Result)
	}
	perms := h.Permissions()
	if len(perms) != 1 || perms[0].ToolCallID != "t1" || perms[0].Kind != "execute" || perms[0].ToolName != "Create act.txt" {
		t.Errorf("Host.Permission got %+v", perms)
	}
}

func TestToolInPlanIsRejectedOnce(t *testing.T) {
	opts, f := newFake(t)
	a := newAgent(t, opts)
	h := newHost("plan")
	s := open(t, a, "c1", session.OpenOptions{}, h)
	// Denied, the agent ends the turn as copilot does: not an error.
	if err := run(t, s, "tool plan.txt"); err != nil {
		t.Fatal(err)
	}
	if got := f.waitOutcomes(1); !slices.Equal(got, []string{"opt-reject_once"}) {
		t.Errorf("permission answers = %q, want the reject-once option", got)
	}
	if _, err := os.Stat(filepath.Join(f.workDir, "plan.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("plan.txt: %v; the denied tool must not run", err)
	}
	ends := testsupport.OfType[session.ToolEnd](h.Events())
	if len(ends) != 1 || !ends[0].Denied || ends[0].Success || ends[0].Result != session.PlanDenialReason {
		t.Errorf("tool end = %+v, want denied with the plan reason", ends)
	}
}

// TestPermissionWaitsForEarlierUpdates: the SDK runs a request's handler at
// once, so without the orderer the permission request could overtake the
// text and the tool_call before it. Repeated to give the race its chances.
// The agent is sent nothing for it.
func TestPermissionWaitsForEarlierUpdates(t *testing.T) {
	opts, f := newFake(t)
	h := newHost("act")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	for i := range 20 {
		n := len(h.Events())
		if err := run(t, s, "tool x.txt"); err != nil {
			t.Fatal(err)
		}
		got := shape(h.Since(n))
		if len(got) < 3 || got[0] != "delta:I will create x.txt." || got[1] != "message:I will create x.txt." || got[2] != "start:t1:Create x.txt" {
			t.Fatalf("turn %d: events = %q, want the text before the tool", i, got)
		}
	}
	if n := len(f.find("_pilotdesk/barrier")); n != 0 {
		t.Errorf("%d barrier requests sent to the agent, want none", n)
	}
}

// TestNeverAllowAlways: act picks allow-once wherever it is listed, and
// with no allow-once option refuses rather than answering allow-always.
func TestNeverAllowAlways(t *testing.T) {
	t.Run("allow-once listed after allow-always", func(t *testing.T) {
		opts, f := newFake(t, fakeagent.EnvOptions+"=allow_always,reject_always,allow_once,reject_once")
		s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, newHost("act"))
		if err := run(t, s, "tool a.txt"); err != nil {
			t.Fatal(err)
		}
		if got := f.waitOutcomes(1); !slices.Equal(got, []string{"opt-allow_once"}) {
			t.Errorf("permission answers = %q", got)
		}
	})
	t.Run("no allow-once option", func(t *testing.T) {
		opts, f := newFake(t, fakeagent.EnvOptions+"=allow_always,reject_once")
		h := newHost("act")
		s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
		for range 2 {
			if err := run(t, s, "tool a.txt"); err != nil {
				t.Fatal(err)
			}
		}
		if got := f.waitOutcomes(2); !slices.Equal(got, []string{"cancelled", "cancelled"}) {
			t.Errorf("permission answers = %q, want cancelled (never allow_always)", got)
		}
		if _, err := os.Stat(filepath.Join(f.workDir, "a.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a.txt: %v; nothing may run", err)
		}
		notes := notesOf(h.Events())
		if len(notes) != 1 || !strings.Contains(notes[0], "no allow-once option") {
			t.Errorf("notes = %q, want one about the missing allow-once option", notes)
		}
	})
}

// TestNoRejectOption: plan cancels the request instead, and the transcript
// says so once per conversation.
func TestNoRejectOption(t *testing.T) {
	opts, f := newFake(t, fakeagent.EnvOptions+"=allow_once,allow_always")
	h := newHost("plan")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	for range 2 {
		if err := run(t, s, "tool p.txt"); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.waitOutcomes(2); !slices.Equal(got, []string{"cancelled", "cancelled"}) {
		t.Errorf("permission answers = %q", got)
	}
	if _, err := os.Stat(filepath.Join(f.workDir, "p.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("p.txt: %v; plan must not let it run", err)
	}
	notes := notesOf(h.Events())
	if len(notes) != 1 || !strings.Contains(notes[0], "no reject-once option") {
		t.Errorf("notes = %q, want one about the missing reject option", notes)
	}
	for _, e := range testsupport.OfType[session.ToolEnd](h.Events()) {
		if !e.Denied {
			t.Errorf("tool end %+v, want denied", e)
		}
	}
}

// notesOf returns pilotdesk's own remarks in the transcript.
func notesOf(events []session.Event) []string {
	var out []string
	for _, m := range testsupport.OfType[session.Message](events) {
		if strings.HasPrefix(m.Content, "⚠ pilotdesk: ") {
			out = append(out, m.Content)
		}
	}
	return out
}

// TestModeSwitchMidTurn: the decision reads the mode when each request
// arrives, so a switch to act after the first denial lets the second run.
func TestModeSwitchMidTurn(t *testing.T) {
	opts, f := newFake(t)
	h := newHost("plan")
	h.OnEmit = func(h *testHost, e session.Event) {
		if end, ok := e.(session.ToolEnd); ok && end.ToolCallID == "t1" {
			h.SetMode("act")
		}
	}
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	if err := run(t, s, "twotools"); err != nil {
		t.Fatal(err)
	}
	if got := f.waitOutcomes(2); !slices.Equal(got, []string{"opt-reject_once", "opt-allow_once"}) {
		t.Errorf("permission answers = %q", got)
	}
	if _, err := os.Stat(filepath.Join(f.workDir, "first.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("first.txt: %v; denied in plan", err)
	}
	if _, err := os.Stat(filepath.Join(f.workDir, "second.txt")); err != nil {
		t.Errorf("second.txt: %v; allowed after the switch to act", err)
	}
	var ends []string
	for _, e := range shape(h.Events()) {
		if strings.HasPrefix(e, "end:") {
			ends = append(ends, e)
		}
	}
	if !slices.Equal(ends, []string{"end:t1:denied", "end:t2:ok"}) {
		t.Errorf("tool ends = %q", ends)
	}
}

func TestToolRunWithoutAsking(t *testing.T) {
	opts, _ := newFake(t)
	h := newHost("plan")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	if err := run(t, s, "read"); err != nil {
		t.Fatal(err)
	}
	if notes := notesOf(h.Events()); len(notes) != 0 {
		t.Errorf("a read without asking is no news; notes = %q", notes)
	}
	for range 2 {
		if err := run(t, s, "noask"); err != nil {
			t.Fatal(err)
		}
	}
	notes := notesOf(h.Events())
	if len(notes) != 1 || !strings.Contains(notes[0], "“Run ls” (execute) without asking permission") {
		t.Errorf("notes = %q, want one about the tool run unasked", notes)
	}
	// The note sits between the tool's end and the agent's next text.
	got := shape(h.Events())
	i := slices.Index(got, "end:n1:ok")
	if i < 0 || i+1 >= len(got) || !strings.HasPrefix(got[i+1], "message:⚠ pilotdesk") {
		t.Errorf("events = %q", got)
	}
}

func TestDiffResult(t *testing.T) {
	opts, _ := newFake(t)
	h := newHost("act")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	if err := run(t, s, "diff"); err != nil {
		t.Fatal(err)
	}
	ends := testsupport.OfType[session.ToolEnd](h.Events())
	want := "--- /w/notes.txt\n+++ /w/notes.txt\n@@ -2 +2 @@\n-two\n+TWO"
	if len(ends) != 1 || !ends[0].Success || ends[0].Result != want {
		t.Fatalf("tool end = %+v, want the diff\n%s", ends, want)
	}
}

func TestCancel(t *testing.T) {
	opts, f := newFake(t)
	h := newHost("act")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	ctx, abort := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, session.Turn{Prompt: "hang"}) }()
	h.WaitFor(t, wait, "the first delta", func(ev []session.Event) bool { return strings.Contains(testsupport.Text(ev), "Thinking...") })
	started := time.Now()
	abort()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("aborted turn: %v, want context.Canceled", err)
		}
	case <-time.After(wait):
		t.Fatal("the aborted turn did not end")
	}
	t.Logf("abort to end of turn: %v", time.Since(started))
	// The fake logs the notification after it has ended the turn.
	deadline := time.Now().Add(wait)
	for len(f.find("session/cancel")) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(f.find("session/cancel")); n != 1 {
		t.Errorf("session/cancel sent %d times", n)
	}
	// The partial text is a whole message, and the session goes on.
	if got := shape(h.Events()); !slices.Equal(got, []string{"delta:Thinking...", "message:Thinking..."}) {
		t.Errorf("events = %q", got)
	}
	n := len(h.Events())
	if err := run(t, s, "hello"); err != nil {
		t.Fatalf("the turn after the abort: %v", err)
	}
	if got := testsupport.Text(h.Since(n)); got != "Hello from the fake." {
		t.Errorf("next turn's text = %q", got)
	}
}

// TestCancelWithOpenPermission: the request still open when the turn is
// aborted is answered "cancelled" without asking the Host, and the tool's
// row is closed.
func TestCancelWithOpenPermission(t *testing.T) {
	opts, f := newFake(t)
	h := newHost("act")
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.OnEmit = func(h *testHost, e session.Event) {
		// Hold the pump on the tool's row: the permission request
		// queued behind it stays open.
		if st, ok := e.(session.ToolStart); ok && st.ToolCallID == "h1" {
			once.Do(func() { close(started) })
			<-release
		}
	}
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	ctx, abort := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, session.Turn{Prompt: "hangperm"}) }()
	select {
	case <-started:
	case <-time.After(wait):
		t.Fatal("the tool did not start")
	}
	// Wait until the request has reached the backend (it is queued).
	deadline := time.Now().Add(wait)
	for len(f.find("session/prompt")) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	abort()
	if got := f.waitOutcomes(1); !slices.Equal(got, []string{"cancelled"}) {
		t.Errorf("the open request was answered %q, want cancelled", got)
	}
	close(release)
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("aborted turn: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("the aborted turn did not end")
	}
	if perms := h.Permissions(); len(perms) != 0 {
		t.Errorf("the Host was asked %+v after the abort", perms)
	}
	ends := testsupport.OfType[session.ToolEnd](h.Events())
	if len(ends) != 1 || ends[0].Success || !strings.Contains(ends[0].Result, "stopped") {
		t.Errorf("tool end = %+v, want the open tool closed as stopped", ends)
	}
	if err := run(t, s, "hello"); err != nil {
		t.Fatalf("the turn after the abort: %v", err)
	}
}

// TestCrash: a crash mid-turn fails the turn with the reason; the next
// turn starts the agent again and loads the session, which keeps its
// history.
func TestCrash(t *testing.T) {
	opts, f := newFake(t)
	h := newHost("act")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	if err := run(t, s, "echo one"); err != nil {
		t.Fatal(err)
	}
	err := run(t, s, "crash")
	if err == nil || !strings.Contains(err.Error(), "exited unexpectedly (exit status 3)") || !strings.Contains(err.Error(), "crashing on purpose") {
		t.Fatalf("crashed turn: %v, want the exit status and the agent's last words", err)
	}
	if msgs := testsupport.OfType[session.Message](h.Events()); len(msgs) != 2 || msgs[1].Content != "About to crash." {
		t.Errorf("messages = %+v, want the crashed turn's text kept", msgs)
	}
	n := len(h.Events())
	if err := run(t, s, "echo two"); err != nil {
		t.Fatalf("the turn after the crash: %v", err)
	}
	if got := testsupport.Text(h.Since(n)); got != "turn 2: echo two" {
		t.Errorf("after the crash the agent said %q, want its history kept", got)
	}
	if pids := f.pids(); len(pids) != 2 {
		t.Errorf("agent processes %v, want 2", pids)
	}
	loads, news := f.find("session/load"), f.find("session/new")
	if len(loads) != 1 || len(news) != 1 || loads[0].Session == "" {
		t.Errorf("session/new %d times, session/load %+v", len(news), loads)
	}
}

func TestStartFailures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, tc := range []struct {
		name    string
		command string
		env     []string
		is      error
		says    []string
	}{
		{"missing binary", "/nonexistent/agent --acp", nil, session.ErrAgentNotFound, []string{"/nonexistent/agent", "--acp-command"}},
		{"not on PATH", "no-such-acp-agent-here acp", nil, session.ErrAgentNotFound, []string{"no-such-acp-agent-here"}},
		{"exits at once", "", []string{fakeagent.EnvExitEarly + "=1"}, nil, []string{"exit status 7", "cannot start (on purpose)"}},
		{"protocol", "", []string{fakeagent.EnvProtocol + "=2"}, session.ErrProtocolMismatch, []string{"version 2"}},
		{"sign-in", "", []string{fakeagent.EnvAuth + "=1"}, session.ErrNotSignedIn, []string{"Run `fake-acp login` in a terminal"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, _ := newFake(t, tc.env...)
			if tc.command != "" {
				opts.Command = tc.command
			}
			a := newAgent(t, opts)
			_, err := a.Open(ctx, "c1", session.OpenOptions{}, newHost("act"))
			if err == nil {
				t.Fatal("Open succeeded")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
	if runtime.GOOS != "windows" {
		// An agent that is there but not executable is not "not found":
		// the error names it and says it may not be run.
		plain := filepath.Join(t.TempDir(), "agent")
		if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		opts, _ := newFake(t)
		opts.Command = plain + " --acp"
		_, err := newAgent(t, opts).Open(ctx, "c1", session.OpenOptions{}, newHost("act"))
		if !errors.Is(err, session.ErrAgentNotExecutable) || errors.Is(err, session.ErrAgentNotFound) ||
			!strings.Contains(err.Error(), "permission denied on "+plain) || !strings.Contains(err.Error(), "--acp-command") || strings.Contains(err.Error(), "not found") {
			t.Errorf("an agent that is not executable: %v", err)
		}
	}
	if _, err := acp.New(acp.Options{Command: "agent 'unterminated"}); err == nil || !strings.Contains(err.Error(), "--acp-command") {
		t.Errorf("New with a bad command line: %v", err)
	}
}

func TestTurnErrors(t *testing.T) {
	opts, _ := newFake(t)
	h := newHost("act")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	if err := run(t, s, "error"); err == nil || !strings.Contains(err.Error(), "the model exploded") {
		t.Errorf("a JSON-RPC error: %v", err)
	}
	err := run(t, s, "refusal")
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a refusal: %v", err)
	}
	if msgs := testsupport.OfType[session.Message](h.Events()); len(msgs) != 1 || msgs[0].Content != "I would rather not." {
		t.Errorf("messages = %+v, want the refused turn's text kept", msgs)
	}
	if err := run(t, s, "hello"); err != nil {
		t.Errorf("the turn after: %v", err)
	}
}

// TestUnknownUpdates: kinds the SDK does not know and context usage stay
// out of the transcript; the rest of the turn arrives.
func TestUnknownUpdates(t *testing.T) {
	opts, _ := newFake(t)
	h := newHost("act")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	if err := run(t, s, "unknown"); err != nil {
		t.Fatal(err)
	}
	want := []string{"think:pondering", "plan:pending", "delta:Still here.", "message:Still here.", "usage:100/10"}
	if got := shape(h.Events()); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

// TestThoughtsAndPlan: thought chunks are reasoning, apart from the reply,
// one run of them one reasoning message; each plan update is the whole
// plan, entries and statuses as the agent sent them.
func TestThoughtsAndPlan(t *testing.T) {
	opts, _ := newFake(t)
	h := newHost("act")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	if err := run(t, s, "think"); err != nil {
		t.Fatal(err)
	}
	want := []string{"think:Reading the ", "think:notes first.", "plan:in_progress,pending", "plan:completed,in_progress",
		"delta:Here is the summary.", "message:Here is the summary.", "think:Done, I think.", "usage:100/10"}
	if got := shape(h.Events()); !slices.Equal(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
	th := testsupport.OfType[session.Reasoning](h.Events())
	if th[0].MessageID == "" || th[0].MessageID != th[1].MessageID || th[2].MessageID == th[0].MessageID {
		t.Errorf("reasoning ids %q %q %q: want the first run one message, the last another", th[0].MessageID, th[1].MessageID, th[2].MessageID)
	}
	if msg := testsupport.OfType[session.Message](h.Events())[0]; msg.MessageID == th[0].MessageID || msg.MessageID == th[2].MessageID {
		t.Errorf("the reply shares its id with the reasoning")
	}
	plan := testsupport.OfType[session.Plan](h.Events())[1]
	if want := (session.PlanEntry{Content: "Write the summary", Priority: "medium", Status: "in_progress"}); plan.Entries[1] != want {
		t.Errorf("plan entry = %+v, want %+v", plan.Entries[1], want)
	}
}

// TestLoadAfterRestart: a new Agent (the relay restarted) on the same
// session map loads the conversation's ACP session, drops the history the
// agent replays, and the agent goes on with its context.
func TestLoadAfterRestart(t *testing.T) {
	opts, f := newFake(t)
	first, err := acp.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, first, "c1", session.OpenOptions{}, newHost("act"))
	if err := run(t, s, "echo one"); err != nil {
		t.Fatal(err)
	}
	first.Close()

	h := newHost("act")
	s = open(t, newAgent(t, opts), "c1", session.OpenOptions{Resume: true}, h)
	if ev := h.Events(); len(ev) != 0 {
		t.Errorf("the replayed history reached the transcript: %s", testsupport.Describe(ev))
	}
	if err := run(t, s, "echo two"); err != nil {
		t.Fatal(err)
	}
	if got := testsupport.Text(h.Events()); got != "turn 2: echo two" {
		t.Errorf("after the restart the agent said %q", got)
	}
	news, loads := f.find("session/new"), f.find("session/load")
	if len(news) != 1 || len(loads) != 1 || loads[0].Session != f.find("session/prompt")[0].Session {
		t.Errorf("session/new %d times, session/load %+v", len(news), loads)
	}
	if closes := f.find("session/close"); len(closes) != 1 {
		t.Errorf("session/close %d times, want once (when the first relay stopped)", len(closes))
	}

	// A conversation that never had a session here starts afresh even
	// with Resume, and so does one whose agent cannot load sessions.
	h2 := newHost("act")
	s2 := open(t, newAgent(t, opts), "c2", session.OpenOptions{Resume: true}, h2)
	if err := run(t, s2, "echo x"); err != nil || testsupport.Text(h2.Events()) != "turn 1: echo x" {
		t.Errorf("new conversation: %v, %q", err, testsupport.Text(h2.Events()))
	}
}

func TestNoLoadStartsAfresh(t *testing.T) {
	opts, f := newFake(t, fakeagent.EnvNoLoad+"=1", fakeagent.EnvClose+"=1")
	first, err := acp.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, first, "c1", session.OpenOptions{}, newHost("act"))
	if err := run(t, s, "echo one"); err != nil {
		t.Fatal(err)
	}
	first.Close()
	h := newHost("act")
	s = open(t, newAgent(t, opts), "c1", session.OpenOptions{Resume: true}, h)
	if err := run(t, s, "echo two"); err != nil {
		t.Fatal(err)
	}
	if got := testsupport.Text(h.Events()); got != "turn 1: echo two" {
		t.Errorf("got %q from a fresh session", got)
	}
	if len(f.find("session/load")) != 0 || len(f.find("session/new")) != 2 || len(f.find("session/close")) != 0 {
		t.Errorf("requests: %+v", f.entries())
	}
}

// TestCumulativeUsage: the Copilot CLI reports the session's total so far;
// each turn reports its own share.
func TestCumulativeUsage(t *testing.T) {
	opts, _ := newFake(t, fakeagent.EnvCumulative+"=1", fakeagent.EnvName+"=Copilot")
	h := newHost("act")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	for range 3 {
		if err := run(t, s, "hello"); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, e := range shape(h.Events()) {
		if strings.HasPrefix(e, "usage:") {
			got = append(got, e)
		}
	}
	if !slices.Equal(got, []string{"usage:100/10", "usage:100/10", "usage:100/10"}) {
		t.Errorf("usage = %q", got)
	}
}

// TestConversationsShareOneProcess: two conversations stream at once in
// one agent process, each into its own Host.
func TestConversationsShareOneProcess(t *testing.T) {
	opts, f := newFake(t)
	a := newAgent(t, opts)
	h1, h2 := newHost("act"), newHost("act")
	s1 := open(t, a, "c1", session.OpenOptions{}, h1)
	s2 := open(t, a, "c2", session.OpenOptions{}, h2)
	var wg sync.WaitGroup
	for _, s := range []session.Session{s1, s2} {
		wg.Go(func() {
			for range 5 {
				if err := run(t, s, "hello"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, h := range []*testHost{h1, h2} {
		if got := testsupport.Text(h.Events()); got != strings.Repeat("Hello from the fake.", 5) {
			t.Errorf("text = %q", got)
		}
	}
	if pids := f.pids(); len(pids) != 1 {
		t.Errorf("agent processes %v, want one", pids)
	}
}

func TestClose(t *testing.T) {
	opts, f := newFake(t)
	a := newAgent(t, opts)
	s := open(t, a, "c1", session.OpenOptions{}, newHost("act"))
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := run(t, s, "hello"); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}
	if len(f.find("session/close")) != 1 {
		t.Errorf("session/close sent %d times", len(f.find("session/close")))
	}
	a.Close()
	if _, err := a.Open(context.Background(), "c2", session.OpenOptions{}, newHost("act")); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Open after Close: %v", err)
	}
}
