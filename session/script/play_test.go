package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/session"
)

func TestAgentNameAndOpen(t *testing.T) {
	a := New(mustParse(t, specExample))
	if a.Name() != "script" {
		t.Errorf("Name() = %q, want script", a.Name())
	}
	if _, err := a.Open(context.Background(), "c", session.OpenOptions{}, nil); err == nil {
		t.Error("Open with no host succeeded")
	}
	if _, err := New(nil).Open(context.Background(), "c", session.OpenOptions{}, newFakeHost("act")); err == nil {
		t.Error("Open of an agent with no script succeeded")
	}
	sess, err := a.Open(context.Background(), "c", session.OpenOptions{Resume: true, Model: "other"}, newFakeHost("act"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := sess.Close(context.Background()); err != nil {
		t.Errorf("Session.Close: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("Agent.Close: %v", err)
	}
}

func TestMatching(t *testing.T) {
	const src = `{"turns": [
		{"match": "Deploy", "steps": [{"delta": "deploying"}]},
		{"match": "deploy now", "steps": [{"delta": "never: the turn above matches first"}]},
		{"match": "", "steps": [{"delta": "empty match: everything"}]}
	]}`
	cases := []struct{ prompt, want string }{
		{"please DEPLOY it", "deploying"},
		{"deploy now", "deploying"},
		{"hello", "empty match: everything"},
		{"", "empty match: everything"},
	}
	for _, tc := range cases {
		host := newFakeHost("act")
		sess, _ := open(t, src, host)
		if err := run(t, sess, tc.prompt); err != nil {
			t.Fatalf("Run(%q): %v", tc.prompt, err)
		}
		events, _, _ := host.recorded()
		if got := strings.Join(deltasOf(events), ""); got != tc.want {
			t.Errorf("Run(%q) said %q, want %q", tc.prompt, got, tc.want)
		}
	}
}

func TestNoMatchingTurn(t *testing.T) {
	host := newFakeHost("act")
	sess, _ := open(t, `{"turns": [{"match": "deploy", "steps": [{"delta": "x"}]}, {"match": "test", "steps": [{"delta": "y"}]}]}`, host)
	if err := run(t, sess, "hello there"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	events, _, _ := host.recorded()
	if len(events) != 2 {
		t.Fatalf("got %d events (%v), want one delta and its message", len(events), events)
	}
	d := events[0].(session.Delta)
	const want = `The script test.json has no reply for "hello there". It answers prompts containing "deploy", "test".`
	if d.Content != want {
		t.Errorf("reply %q, want %q", d.Content, want)
	}
	if m := events[1].(session.Message); m.MessageID != d.MessageID || m.Content != want {
		t.Errorf("message %+v does not close delta %+v", m, d)
	}
}

func TestSubstitutions(t *testing.T) {
	const src = `{"turns": [{"steps": [
		{"delta": "[{{prompt}}|{{mode}}|{{tool}}|{{answer}}|{{index}}|{{error}}]"},
		{"tool": {"name": "bash"}},
		{"ask": {"question": "Which?", "choices": ["red", "blue"]}},
		{"delta": "[{{mode}}|{{tool}}|{{answer}}|{{index}}|{{error}}]"},
		{"input": {"type": "text", "prompt": "Name?"}},
		{"delta": "[{{mode}}|{{tool}}|{{answer}}|{{index}}|{{error}}|{{unknown}}]"}
	]}]}`
	host := newFakeHost("plan")
	host.answer = func(_ context.Context, req session.InputRequest) (session.Answer, error) {
		if req.InputType == "text" {
			host.setMode("act") // the mode is read when each delta plays
			return session.Answer{Text: "{{mode}} Ada", WasFreeform: true, Index: -1}, nil
		}
		return session.Answer{Text: "blue", Index: 1}, nil
	}
	sess, _ := open(t, src, host)
	if err := run(t, sess, "go {{mode}}"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	events, _, _ := host.recorded()
	want := []string{
		// Before any tool or question the outcomes are empty; the prompt is
		// not expanded again.
		"[go {{mode}}|plan||||]",
		"[plan|denied|blue|1|]",
		// An answer is not expanded either; unknown placeholders stay.
		"[act|denied|{{mode}} Ada|-1||{{unknown}}]",
	}
	if got := deltasOf(events); !reflect.DeepEqual(got, want) {
		t.Errorf("deltas\n got %q\nwant %q", got, want)
	}
}

// TestOneMessagePerTurn: every delta of a turn carries one message id, even
// across tool and input steps, and the whole text follows as one Message.
func TestOneMessagePerTurn(t *testing.T) {
	const src = `{"turns": [{"steps": [
		{"delta": "Hello, "},
		{"tool": {"name": "bash", "arguments": {"command": "ls"}, "result": "a b"}},
		{"delta": "world"},
		{"ask": {"question": "OK?"}},
		{"delta": "{{answer}}"},
		{"delta": "!"}
	]}]}`
	host := newFakeHost("act")
	host.answer = func(context.Context, session.InputRequest) (session.Answer, error) {
		return session.Answer{Index: -1}, nil // an empty answer: its delta is not sent
	}
	sess, _ := open(t, src, host)
	ids := map[string]bool{}
	for turn := range 2 {
		before, _, _ := host.recorded()
		if err := run(t, sess, "hi"); err != nil {
			t.Fatalf("Run: %v", err)
		}
		all, _, _ := host.recorded()
		events := all[len(before):]
		if got := deltasOf(events); !reflect.DeepEqual(got, []string{"Hello, ", "world", "!"}) {
			t.Fatalf("turn %d deltas %q", turn, got)
		}
		last, ok := events[len(events)-1].(session.Message)
		if !ok || last.Content != "Hello, world!" {
			t.Fatalf("turn %d: last event %#v, want the whole message", turn, events[len(events)-1])
		}
		if len(messagesOf(events)) != 1 {
			t.Errorf("turn %d: %d messages, want 1", turn, len(messagesOf(events)))
		}
		for _, e := range events {
			if d, ok := e.(session.Delta); ok && d.MessageID != last.MessageID {
				t.Errorf("turn %d: delta id %q, message id %q", turn, d.MessageID, last.MessageID)
			}
		}
		if last.MessageID == "" || ids[last.MessageID] {
			t.Errorf("turn %d: message id %q is empty or reused", turn, last.MessageID)
		}
		ids[last.MessageID] = true
	}
}

func TestTurnWithoutDeltasSendsNoMessage(t *testing.T) {
	host := newFakeHost("act")
	sess, rec := open(t, `{"turns": [{"steps": [{"sleep": "1s"}, {"usage": {"model": "m"}}]}]}`, host)
	if err := run(t, sess, "x"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	events, _, _ := host.recorded()
	if len(events) != 1 {
		t.Errorf("events %#v, want only the usage", events)
	}
	if rec.slept() != time.Second {
		t.Errorf("slept %v, want 1s", rec.slept())
	}
}

func TestToolStep(t *testing.T) {
	const src = `{"turns": [{"steps": [
		{"tool": {"name": "bash", "arguments": {"command": "go test ./..."}, "result": "ok  all tests passed"}},
		{"delta": "first {{tool}}. "},
		{"tool": {"name": "edit"}},
		{"delta": "second {{tool}}."}
	]}]}`
	for _, mode := range []string{"act", "plan"} {
		t.Run(mode, func(t *testing.T) {
			host := newFakeHost(mode)
			sess, _ := open(t, src, host)
			if err := run(t, sess, "x"); err != nil {
				t.Fatalf("Run: %v", err)
			}
			events, perms, _ := host.recorded()
			if len(perms) != 2 {
				t.Fatalf("%d permission requests, want 2", len(perms))
			}
			start := events[0].(session.ToolStart)
			end := events[1].(session.ToolEnd)
			if start.ToolName != "bash" || string(start.Arguments) != `{"command":"go test ./..."}` || start.ToolCallID == "" {
				t.Errorf("tool start %+v", start)
			}
			p := perms[0]
			if p.ToolCallID != start.ToolCallID || p.ToolName != "bash" || p.Kind != "tool" || string(p.Arguments) != string(start.Arguments) {
				t.Errorf("permission request %+v does not describe %+v", p, start)
			}
			if end.ToolCallID != start.ToolCallID {
				t.Errorf("tool end id %q, start id %q", end.ToolCallID, start.ToolCallID)
			}
			second := events[3].(session.ToolStart)
			if second.ToolCallID == start.ToolCallID || second.Arguments != nil {
				t.Errorf("second tool start %+v: id reused or arguments invented", second)
			}
			want := session.ToolEnd{ToolCallID: start.ToolCallID, Success: true, Result: "ok  all tests passed"}
			outcome := "approved"
			if mode == "plan" {
				want = session.ToolEnd{ToolCallID: start.ToolCallID, Denied: true, Result: session.PlanDenialReason}
				outcome = "denied"
			}
			if end != want {
				t.Errorf("tool end %+v, want %+v", end, want)
			}
			if got := strings.Join(deltasOf(events), ""); got != "first "+outcome+". second "+outcome+"." {
				t.Errorf("narration %q", got)
			}
		})
	}
}

// TestToolModeChangeMidTurn: each tool step asks the host at its own moment,
// so a mode change between two calls decides the second one.
func TestToolModeChangeMidTurn(t *testing.T) {
	host := newFakeHost("act")
	host.onEmit = func(e session.Event) {
		if d, ok := e.(session.Delta); ok && d.Content == "switch" {
			host.setMode("plan")
		}
	}
	sess, _ := open(t, `{"turns": [{"steps": [{"tool": {"name": "a"}}, {"delta": "switch"}, {"tool": {"name": "b"}}, {"delta": " {{tool}} in {{mode}}"}]}]}`, host)
	if err := run(t, sess, "x"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	events, _, _ := host.recorded()
	var ends []session.ToolEnd
	for _, e := range events {
		if te, ok := e.(session.ToolEnd); ok {
			ends = append(ends, te)
		}
	}
	if len(ends) != 2 || !ends[0].Success || ends[1].Success || !ends[1].Denied {
		t.Errorf("tool ends %+v, want approved then denied", ends)
	}
	if got := deltasOf(events); got[1] != " denied in plan" {
		t.Errorf("narration %q", got)
	}
}

func TestAskAndInputRequests(t *testing.T) {
	const src = `{"turns": [{"steps": [
		{"ask": {"question": "Which environment?", "choices": ["staging", "prod"], "allowFreeform": true}},
		{"delta": "{{answer}}/{{index}} "},
		{"ask": {"question": "Anything else?"}},
		{"delta": "{{answer}}/{{index}} "},
		{"input": {"type": "approval", "prompt": "Run it?", "choices": ["Run", "Skip"]}},
		{"delta": "{{answer}}/{{index}} "},
		{"input": {"type": "choice", "prompt": "Pick", "choices": ["a", "b", "c"]}},
		{"delta": "{{answer}}/{{index}} "},
		{"input": {"type": "text", "prompt": "Name?"}},
		{"delta": "{{answer}}/{{index}}"}
	]}]}`
	host := newFakeHost("act")
	answers := []session.Answer{
		{Text: "my own env", WasFreeform: true, Index: -1},
		{Text: "no", WasFreeform: true, Index: -1},
		{Text: "approve", Index: 0},
		{Text: "c", Index: 2},
		{Text: "Ada", WasFreeform: true, Index: -1},
	}
	var n int
	host.answer = func(context.Context, session.InputRequest) (session.Answer, error) {
		a := answers[n]
		n++
		return a, nil
	}
	sess, _ := open(t, src, host)
	if err := run(t, sess, "x"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	events, _, asks := host.recorded()
	yes := true
	want := []session.InputRequest{
		{Question: "Which environment?", Choices: []string{"staging", "prod"}, AllowFreeform: &yes},
		{Question: "Anything else?"},
		{Question: "Run it?", Choices: []string{"Run", "Skip"}, InputType: "approval"},
		{Question: "Pick", Choices: []string{"a", "b", "c"}, InputType: "choice"},
		{Question: "Name?", InputType: "text"},
	}
	if !reflect.DeepEqual(asks, want) {
		t.Errorf("requests\n got %+v\nwant %+v", asks, want)
	}
	if got := strings.Join(deltasOf(events), ""); got != "my own env/-1 no/-1 approve/0 c/2 Ada/-1" {
		t.Errorf("echoed answers %q", got)
	}
}

// TestRequestsAreCopies: a host that changes a request it was given cannot
// change the script.
func TestRequestsAreCopies(t *testing.T) {
	host := newFakeHost("act")
	var seen []string
	host.answer = func(_ context.Context, req session.InputRequest) (session.Answer, error) {
		seen = append(seen, fmt.Sprintf("%s %v", req.Choices[0], *req.AllowFreeform))
		req.Choices[0] = "changed"
		*req.AllowFreeform = false
		return session.Answer{Text: "x"}, nil
	}
	s := mustParse(t, `{"turns": [{"steps": [{"ask": {"question": "q", "choices": ["a"], "allowFreeform": true}}]}]}`)
	a := New(s).(*Agent)
	a.sleep = (&sleepRecorder{}).sleep
	sess, err := a.Open(context.Background(), "c", session.OpenOptions{}, host)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := run(t, sess, "x"); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
	if !reflect.DeepEqual(seen, []string{"a true", "a true"}) {
		t.Errorf("the host saw %q: its change to the first request reached the second", seen)
	}
	if step := s.Turns[0].Steps[0].(AskStep); step.Choices[0] != "a" || !*step.AllowFreeform {
		t.Errorf("the script's step was changed: %+v", step)
	}
}

func TestInputTimeoutGoesOn(t *testing.T) {
	host := newFakeHost("act")
	host.answer = func(context.Context, session.InputRequest) (session.Answer, error) {
		return session.Answer{}, fmt.Errorf("request r1: %w", session.ErrTimeout)
	}
	sess, _ := open(t, `{"turns": [{"steps": [
		{"ask": {"question": "q", "choices": ["a", "b"]}},
		{"delta": "[{{answer}}|{{index}}|{{error}}]"},
		{"delta": " and on"}
	]}]}`, host)
	if err := run(t, sess, "x"); err != nil {
		t.Fatalf("Run after a timeout: %v", err)
	}
	events, _, _ := host.recorded()
	if got := strings.Join(deltasOf(events), ""); got != "[|-1|timeout] and on" {
		t.Errorf("deltas %q", got)
	}
	if m := messagesOf(events); len(m) != 1 || m[0].Content != "[|-1|timeout] and on" {
		t.Errorf("messages %+v", m)
	}
}

func TestInvalidRequestGoesOn(t *testing.T) {
	host := newFakeHost("act")
	host.answer = func(_ context.Context, req session.InputRequest) (session.Answer, error) {
		if req.InputType == "choice" && len(req.Choices) == 0 {
			return session.Answer{}, fmt.Errorf("%w: a choice request needs choices", session.ErrInvalidRequest)
		}
		return session.Answer{Text: "fine", Index: -1}, nil
	}
	sess, _ := open(t, `{"turns": [{"steps": [
		{"input": {"type": "text", "prompt": "first"}},
		{"input": {"type": "choice", "prompt": "Pick"}},
		{"delta": "[{{answer}}|{{index}}|{{error}}]"},
		{"input": {"type": "text", "prompt": "again"}},
		{"delta": "[{{answer}}|{{error}}]"}
	]}]}`, host)
	if err := run(t, sess, "x"); err != nil {
		t.Fatalf("Run after an invalid request: %v", err)
	}
	events, _, asks := host.recorded()
	if len(asks) != 3 || asks[1].Choices != nil {
		t.Errorf("requests %+v: the malformed one must reach the host as written", asks)
	}
	if got := strings.Join(deltasOf(events), ""); got != "[|-1|invalid][fine|]" {
		t.Errorf("deltas %q", got)
	}
}

// TestRejection covers both orders of the relay's two signals: the error
// from Ask and the cancellation of the turn's context.
func TestRejection(t *testing.T) {
	const src = `{"turns": [{"steps": [{"delta": "partial"}, {"input": {"type": "approval", "prompt": "Go?", "choices": ["Go", "Stop"]}}, {"delta": "never"}]}]}`
	t.Run("error first", func(t *testing.T) {
		host := newFakeHost("act")
		host.answer = func(context.Context, session.InputRequest) (session.Answer, error) {
			return session.Answer{}, session.ErrRejected
		}
		sess, _ := open(t, src, host)
		err := run(t, sess, "x")
		if !errors.Is(err, session.ErrRejected) {
			t.Fatalf("Run = %v, want ErrRejected", err)
		}
		checkEndedAfterPartial(t, host)
	})
	t.Run("context cancelled first", func(t *testing.T) {
		host := newFakeHost("act")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		host.answer = func(context.Context, session.InputRequest) (session.Answer, error) {
			cancel()
			return session.Answer{}, session.ErrRejected
		}
		sess, _ := open(t, src, host)
		if err := sess.Run(ctx, session.Turn{Prompt: "x"}); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		checkEndedAfterPartial(t, host)
	})
}

// checkEndedAfterPartial: the turn stopped at the request; no later delta
// and no message (the relay keeps the partial text from the deltas).
func checkEndedAfterPartial(t *testing.T, host *fakeHost) {
	t.Helper()
	events, _, _ := host.recorded()
	if got := deltasOf(events); !reflect.DeepEqual(got, []string{"partial"}) {
		t.Errorf("deltas %q, want only the partial text", got)
	}
	if m := messagesOf(events); len(m) != 0 {
		t.Errorf("an ended turn sent messages %+v", m)
	}
}

func TestAbortDuringSleep(t *testing.T) {
	host := newFakeHost("act")
	a := New(mustParse(t, `{"turns": [{"steps": [{"delta": "waiting"}, {"sleep": "1h"}, {"delta": "never"}]}]}`)) // the real pause
	sess, err := a.Open(context.Background(), "c", session.OpenOptions{}, host)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	host.onEmit = func(e session.Event) {
		if _, ok := e.(session.Delta); ok {
			close(started)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sess.Run(ctx, session.Turn{Prompt: "x"}) }()
	<-started
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of the abort")
	}
	checkEndedAfter(t, host, "waiting")
}

func TestAbortDuringAsk(t *testing.T) {
	host := newFakeHost("act")
	asked := make(chan struct{})
	host.answer = func(ctx context.Context, _ session.InputRequest) (session.Answer, error) {
		close(asked)
		<-ctx.Done() // the relay's bridge returns when the turn is aborted
		return session.Answer{}, ctx.Err()
	}
	sess, _ := open(t, `{"turns": [{"steps": [{"delta": "question"}, {"ask": {"question": "?"}}, {"delta": "never"}]}]}`, host)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sess.Run(ctx, session.Turn{Prompt: "x"}) }()
	<-asked
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of the abort")
	}
	checkEndedAfter(t, host, "question")
}

// TestAbortBetweenSteps: an abort noticed between two steps stops the turn
// before the next one shows.
func TestAbortBetweenSteps(t *testing.T) {
	host := newFakeHost("act")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host.onEmit = func(e session.Event) {
		if d, ok := e.(session.Delta); ok && d.Content == "one" {
			cancel()
		}
	}
	sess, _ := open(t, `{"turns": [{"steps": [{"delta": "one"}, {"delta": "two"}]}]}`, host)
	if err := sess.Run(ctx, session.Turn{Prompt: "x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	checkEndedAfter(t, host, "one")
}

// TestAbortDuringPermission: the tool card is closed (it never ran) and the
// turn ends.
func TestAbortDuringPermission(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host := &cancellingHost{fakeHost: newFakeHost("act"), cancel: cancel}
	sess, _ := open(t, `{"turns": [{"steps": [{"tool": {"name": "bash", "result": "ran"}}, {"delta": "never"}]}]}`, host)
	if err := sess.Run(ctx, session.Turn{Prompt: "x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	events, _, _ := host.recorded()
	if len(events) != 2 {
		t.Fatalf("events %#v, want tool start and end", events)
	}
	if end := events[1].(session.ToolEnd); end.Success || end.Result == "ran" {
		t.Errorf("tool end %+v: an aborted tool must not report success", end)
	}
}

// cancellingHost aborts the turn while deciding a permission.
type cancellingHost struct {
	*fakeHost
	cancel context.CancelFunc
}

func (h *cancellingHost) Permission(ctx context.Context, req session.PermissionRequest) session.Decision {
	h.cancel()
	return h.fakeHost.Permission(ctx, req)
}

func checkEndedAfter(t *testing.T, host *fakeHost, last string) {
	t.Helper()
	events, _, _ := host.recorded()
	if got := deltasOf(events); !reflect.DeepEqual(got, []string{last}) {
		t.Errorf("deltas %q, want only %q", got, last)
	}
	if m := messagesOf(events); len(m) != 0 {
		t.Errorf("an aborted turn sent messages %+v", m)
	}
}

func TestUsageAndShutdown(t *testing.T) {
	host := newFakeHost("act")
	sess, _ := open(t, specExample, host)
	host.answer = func(_ context.Context, req session.InputRequest) (session.Answer, error) {
		if req.InputType == "approval" {
			return session.Answer{Text: "approve", Index: 0}, nil
		}
		return session.Answer{Text: "prod", Index: 1}, nil
	}
	if err := run(t, sess, "deploy please"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	events, _, _ := host.recorded()
	var usage *session.Usage
	var shutdown *session.Shutdown
	for _, e := range events {
		switch e := e.(type) {
		case session.Usage:
			usage = &e
		case session.Shutdown:
			shutdown = &e
		}
	}
	if usage == nil || usage.Model != "gpt-5" || *usage.Cost != 1 || *usage.InputTokens != 1200 || *usage.OutputTokens != 80 ||
		*usage.CacheReadTokens != 300 || *usage.CacheWriteTokens != 0 {
		t.Fatalf("usage %+v", usage)
	}
	var quota map[string]struct {
		EntitlementRequests int     `json:"entitlementRequests"`
		RemainingPercentage float64 `json:"remainingPercentage"`
	}
	if err := json.Unmarshal(usage.QuotaSnapshots, &quota); err != nil || quota["premium_interactions"].EntitlementRequests != 300 {
		t.Errorf("quota %s: %v", usage.QuotaSnapshots, err)
	}
	if shutdown == nil || shutdown.TotalPremiumRequests != 1 || !strings.HasPrefix(string(shutdown.ModelMetrics), `{"gpt-5":{"requests":{"count":1`) {
		t.Fatalf("shutdown %+v", shutdown)
	}
	if got := strings.Join(deltasOf(events), ""); got != "Checking the build... The tool was approved. You said approve." {
		t.Errorf("deltas %q", got)
	}
	if _, ok := events[len(events)-1].(session.Message); !ok {
		t.Errorf("last event %#v, want the message", events[len(events)-1])
	}

	// After a shutdown step the conversation simply goes on.
	if err := run(t, sess, "hello"); err != nil {
		t.Fatalf("Run after shutdown: %v", err)
	}
	all, _, _ := host.recorded()
	if got := deltasOf(all[len(events):]); !reflect.DeepEqual(got, []string{"Echo: hello"}) {
		t.Errorf("turn after shutdown said %q", got)
	}
}

func TestErrorStep(t *testing.T) {
	host := newFakeHost("act")
	sess, _ := open(t, `{"turns": [{"steps": [{"delta": "trying"}, {"error": "the model is overloaded"}, {"delta": "never"}]}]}`, host)
	err := run(t, sess, "x")
	if err == nil || err.Error() != "the model is overloaded" {
		t.Fatalf("Run = %v, want the script's error text", err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, session.ErrRejected) {
		t.Errorf("error %v must read as a failure, not an abort", err)
	}
	checkEndedAfter(t, host, "trying")
}

// TestConcurrentSessions: one Agent plays many conversations at once.
func TestConcurrentSessions(t *testing.T) {
	rec := &sleepRecorder{}
	a := New(mustParse(t, specExample)).(*Agent)
	a.sleep = rec.sleep
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			host := newFakeHost([]string{"act", "plan"}[i%2])
			host.answer = func(context.Context, session.InputRequest) (session.Answer, error) {
				return session.Answer{Text: fmt.Sprint(i), Index: -1}, nil
			}
			sess, err := a.Open(context.Background(), fmt.Sprint("c", i), session.OpenOptions{}, host)
			if err != nil {
				errs <- err
				return
			}
			if err := run(t, sess, "deploy"); err != nil {
				errs <- err
				return
			}
			events, _, _ := host.recorded()
			want := fmt.Sprintf("The tool was %s. You said %d.", map[bool]string{true: "approved", false: "denied"}[i%2 == 0], i)
			if m := messagesOf(events); len(m) != 1 || !strings.HasSuffix(m[0].Content, want) {
				errs <- fmt.Errorf("session %d: messages %+v", i, m)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestHandBuiltScript: a Script made in Go, not parsed, plays the same.
func TestHandBuiltScript(t *testing.T) {
	s := &Script{Name: "inline", Turns: []Turn{
		{Match: "Deploy", HasMatch: true, Steps: []Step{DeltaStep{Text: "deploying"}}},
		{Steps: []Step{DeltaStep{Text: "other"}}},
	}}
	host := newFakeHost("act")
	sess, err := New(s).Open(context.Background(), "c", session.OpenOptions{}, host)
	if err != nil {
		t.Fatal(err)
	}
	for _, prompt := range []string{"hello", "please deploy"} {
		if err := run(t, sess, prompt); err != nil {
			t.Fatal(err)
		}
	}
	events, _, _ := host.recorded()
	if got := deltasOf(events); !reflect.DeepEqual(got, []string{"other", "deploying"}) {
		t.Errorf("deltas %q", got)
	}
}
