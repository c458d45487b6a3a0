package copilot_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/session"
)

// What the CLI asks of the Host while a turn streams: permissions under a
// mode that changes, questions to the user, an abort while it asks, and
// requests the backend does not serve.

func TestPermissionAfterModeSwitchMidStream(t *testing.T) {
	opts, fake := newFake(t)
	a := newAgent(t, opts)
	h := newHost("plan")
	// The user flips to act while the turn streams, right after the first
	// tool was denied.
	h.OnEmit = func(h *testHost, e session.Event) {
		if end, ok := e.(session.ToolEnd); ok && end.ToolCallID == "call_1" {
			h.SetMode("act")
		}
	}
	s := open(t, a, "conv-tools", session.OpenOptions{}, h)
	if err := run(t, s, "tools"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	events := h.Events()
	ends := testsupport.OfType[session.ToolEnd](events)
	if len(ends) != 2 {
		t.Fatalf("tool ends: %s", testsupport.Describe(events))
	}
	if e := ends[0]; e.ToolCallID != "call_1" || e.Success || !e.Denied || !strings.Contains(e.Result, session.PlanDenialReason) {
		t.Errorf("first tool = %+v, want denied with the plan reason", e)
	}
	if e := ends[1]; e.ToolCallID != "call_2" || !e.Success || e.Denied || e.Result != "ran: touch two.txt" {
		t.Errorf("second tool = %+v, want approved and run", e)
	}
	if got := testsupport.Text(events); !strings.HasSuffix(got, "call_1=rejected("+session.PlanDenialReason+") call_2=approved") {
		t.Errorf("text = %q: the CLI did not get reject-with-feedback then approve-once", got)
	}
	starts := testsupport.OfType[session.ToolStart](events)
	if len(starts) != 2 || starts[0].ToolName != "bash" || string(starts[0].Arguments) != `{"command":"touch one.txt"}` {
		t.Errorf("tool starts = %+v", starts)
	}
	perms := h.Permissions()
	if len(perms) != 2 || perms[0].ToolName != "bash" || perms[0].Kind != "shell" || perms[0].ToolCallID != "call_1" ||
		string(perms[0].Arguments) != `{"command":"touch one.txt"}` {
		t.Errorf("permission requests = %+v", perms)
	}
	// The decisions on the wire, and the session never recreated nor put
	// in the CLI's own plan mode.
	var kinds []string
	for _, e := range fake.find("session.permissions.handlePendingPermissionRequest") {
		var p struct {
			Result struct {
				Kind     string `json:"kind"`
				Feedback string `json:"feedback"`
			} `json:"result"`
		}
		_ = json.Unmarshal(e.Params, &p)
		kinds = append(kinds, p.Result.Kind+":"+p.Result.Feedback)
	}
	if !slices.Equal(kinds, []string{"reject:" + session.PlanDenialReason, "approve-once:"}) {
		t.Errorf("decisions = %q", kinds)
	}
	methods := fake.methods()
	if count(methods, "session.create") != 1 || count(methods, "session.mode.set") != 0 || count(methods, "session.resume") != 0 {
		t.Errorf("requests = %v", methods)
	}
}

func TestUserInputRequestDuringStream(t *testing.T) {
	opts, _ := newFake(t)
	a := newAgent(t, opts)
	h := newHost("act")
	var seenBefore []session.Event
	h.OnAsk = func(ctx context.Context, h *testHost, req session.InputRequest) (session.Answer, error) {
		seenBefore = h.Events()
		return session.Answer{Text: "blue", Index: 1}, nil
	}
	s := open(t, a, "conv-ask", session.OpenOptions{}, h)
	if err := run(t, s, "ask"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	asks := h.Asks()
	if len(asks) != 1 || asks[0].Question != "Which color?" || !slices.Equal(asks[0].Choices, []string{"red", "blue"}) ||
		asks[0].AllowFreeform == nil || !*asks[0].AllowFreeform {
		t.Fatalf("asks = %+v", asks)
	}
	// The question came after the text and tool start that lead up to it.
	if testsupport.Text(seenBefore) != "Let me ask. " || len(testsupport.OfType[session.ToolStart](seenBefore)) != 1 {
		t.Errorf("events before the question: %s", testsupport.Describe(seenBefore))
	}
	events := h.Events()
	if got := testsupport.Text(events); !strings.HasSuffix(got, "you said blue (freeform=false)") {
		t.Errorf("text = %q: the answer did not reach the CLI", got)
	}
	ends := testsupport.OfType[session.ToolEnd](events)
	if len(ends) != 1 || ends[0].Result != "User selected: blue" || ends[0].Denied {
		t.Errorf("ask_user tool end = %+v", ends)
	}
}

func TestUserInputFailuresReachTheModel(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{session.ErrTimeout, "the user did not answer in time"},
		{session.ErrRejected, "the user rejected the question"},
		{errors.New("disk full"), "the user could not answer: disk full"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			opts, _ := newFake(t)
			a := newAgent(t, opts)
			h := newHost("act")
			h.OnAsk = func(context.Context, *testHost, session.InputRequest) (session.Answer, error) {
				return session.Answer{}, tc.err
			}
			s := open(t, a, "conv", session.OpenOptions{}, h)
			if err := run(t, s, "ask"); err != nil {
				t.Fatal(err)
			}
			if got := testsupport.Text(h.Events()); !strings.Contains(got, "no answer: "+tc.want) {
				t.Errorf("text = %q, want the CLI to get %q", got, tc.want)
			}
		})
	}
}

func TestAbortWhileAsking(t *testing.T) {
	opts, fake := newFake(t)
	a := newAgent(t, opts)
	h := newHost("act")
	asked := make(chan struct{})
	askErr := make(chan error, 1)
	h.OnAsk = func(ctx context.Context, h *testHost, req session.InputRequest) (session.Answer, error) {
		close(asked)
		<-ctx.Done() // nobody answers; the abort must end the wait
		askErr <- ctx.Err()
		return session.Answer{}, ctx.Err()
	}
	s := open(t, a, "conv-abort-ask", session.OpenOptions{}, h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, session.Turn{Prompt: "ask"}) }()
	select {
	case <-asked:
	case <-time.After(wait):
		t.Fatal("no question")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(wait):
		t.Fatal("Run did not return after the abort")
	}
	if err := <-askErr; err == nil {
		t.Error("the question outlived the turn")
	}
	if n := len(fake.find("session.abort")); n != 1 {
		t.Errorf("session.abort sent %d times", n)
	}
	// The session goes on.
	if err := run(t, s, "next"); err != nil {
		t.Fatal(err)
	}
}

func TestAbortStreamingTurn(t *testing.T) {
	opts, fake := newFake(t)
	a := newAgent(t, opts)
	h := newHost("act")
	s := open(t, a, "conv-hang", session.OpenOptions{}, h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, session.Turn{Prompt: "hang"}) }()
	h.WaitFor(t, wait, "the first delta", func(ev []session.Event) bool { return testsupport.Text(ev) == "working" })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(wait):
		t.Fatal("Run did not return after cancel")
	}
	if n := len(fake.find("session.abort")); n != 1 {
		t.Errorf("session.abort sent %d times", n)
	}
	if err := run(t, s, "after"); err != nil {
		t.Fatal(err)
	}
	if got := testsupport.Text(h.Events()); !strings.HasSuffix(got, "turn 2: echo after") {
		t.Errorf("text = %q", got)
	}
}

func TestUnexpectedServerRequestsAreRefused(t *testing.T) {
	opts, _ := newFake(t)
	a := newAgent(t, opts)
	h := newHost("act")
	s := open(t, a, "conv-unexpected", session.OpenOptions{}, h)
	if err := run(t, s, "unexpected"); err != nil {
		t.Fatal(err)
	}
	if got := testsupport.Text(h.Events()); got != "exitPlanMode.request=-32601 hooks.invoke=-32601" {
		t.Errorf("text = %q: unexpected requests must get method not found", got)
	}
}
