package copilot_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
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

func TestStreamedTurnUsageAndShutdown(t *testing.T) {
	opts, fake := newFake(t)
	opts.Model = "gpt-test"
	provider := listeningURL(t)
	opts.ProviderURL = provider
	opts.ProviderKey = "k"
	a := newAgent(t, opts)
	h := newHost("act")
	s := open(t, a, "conv-1", session.OpenOptions{}, h)

	if err := run(t, s, "hello world"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	events := h.Events()
	deltas := testsupport.OfType[session.Delta](events)
	if len(deltas) != 3 || testsupport.Text(events) != "turn 1: echo hello world" {
		t.Errorf("deltas = %s", testsupport.Describe(events))
	}
	msgs := testsupport.OfType[session.Message](events)
	if len(msgs) != 1 || msgs[0].Content != "turn 1: echo hello world" || msgs[0].MessageID != deltas[0].MessageID {
		t.Errorf("messages = %+v", msgs)
	}
	usage := testsupport.OfType[session.Usage](events)
	if len(usage) != 1 {
		t.Fatalf("usage events = %d", len(usage))
	}
	u := usage[0]
	if u.Model != "gpt-test" || u.Cost == nil || *u.Cost != 1 || *u.InputTokens != 100 || *u.OutputTokens != 7 ||
		*u.CacheReadTokens != 10 || *u.CacheWriteTokens != 0 || !strings.Contains(string(u.QuotaSnapshots), "premium_interactions") {
		t.Errorf("usage = %s", testsupport.Describe(usage2events(usage)))
	}

	// What went on the wire.
	argv := fake.find("argv")
	if len(argv) != 1 || string(argv[0].Params) != `["--headless","--no-auto-update","--stdio"]` {
		t.Errorf("argv = %+v", argv)
	}
	creates := fake.find("session.create")
	if len(creates) != 1 {
		t.Fatalf("session.create sent %d times", len(creates))
	}
	var create map[string]any
	_ = json.Unmarshal(creates[0].Params, &create)
	for k, want := range map[string]any{
		"streaming": true, "requestPermission": true, "requestUserInput": true,
		"requestExitPlanMode": false, "requestElicitation": false, "model": "gpt-test",
		"workingDirectory": opts.WorkDir,
	} {
		if create[k] != want {
			t.Errorf("session.create %s = %v, want %v", k, create[k], want)
		}
	}
	if id, _ := create["sessionId"].(string); len(id) != 36 {
		t.Errorf("sessionId = %q, want a client-made UUID", id)
	}
	prov, _ := create["provider"].(map[string]any)
	if prov["type"] != "openai" || prov["baseUrl"] != provider || prov["apiKey"] != "k" {
		t.Errorf("provider = %v", prov)
	}
	if got := fake.methods()[:3]; !slices.Equal(got, []string{"argv", "connect", "session.create"}) {
		t.Errorf("first requests = %v", got)
	}

	// Close detaches and reports the CLI's shutdown numbers.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	sd := testsupport.OfType[session.Shutdown](h.Events())
	if len(sd) != 1 || sd[0].TotalPremiumRequests != 1 || !strings.Contains(string(sd[0].ModelMetrics), `"gpt-test"`) {
		t.Errorf("shutdown = %+v", sd)
	}
	if n := len(fake.find("session.detach")); n != 1 {
		t.Errorf("session.detach sent %d times", n)
	}
	if err := s.Run(ctx, session.Turn{Prompt: "again"}); !errors.Is(err, copilot.ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}

	// Agent.Close stops the process.
	pids := fake.pids()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitGone(t, pids[0], wait)
}

func usage2events(us []session.Usage) []session.Event {
	var out []session.Event
	for _, u := range us {
		out = append(out, u)
	}
	return out
}

func TestModelSwitchBeforeTurn(t *testing.T) {
	opts, fake := newFake(t)
	opts.Model = "m1"
	a := newAgent(t, opts)
	h := newHost("act")
	s := open(t, a, "conv-model", session.OpenOptions{}, h)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for range 2 {
		if err := s.Run(ctx, session.Turn{Prompt: "hi", Model: "m2"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Run(ctx, session.Turn{Prompt: "hi"}); err != nil { // empty: keep the current
		t.Fatal(err)
	}
	switches := fake.find("session.model.switchTo")
	if len(switches) != 1 || !strings.Contains(string(switches[0].Params), `"modelId":"m2"`) {
		t.Errorf("switchTo = %+v, want one switch to m2", switches)
	}
	for _, u := range testsupport.OfType[session.Usage](h.Events()) {
		if u.Model != "m2" {
			t.Errorf("usage model %q, want m2", u.Model)
		}
	}
	// Open with its own model overrides Options.Model.
	h2 := newHost("act")
	s2 := open(t, a, "conv-model-2", session.OpenOptions{Model: "m3"}, h2)
	if err := s2.Run(ctx, session.Turn{Prompt: "x"}); err != nil {
		t.Fatal(err)
	}
	if u := testsupport.OfType[session.Usage](h2.Events()); len(u) != 1 || u[0].Model != "m3" {
		t.Errorf("usage = %+v, want model m3", u)
	}
}

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

func TestSessionErrorFailsTheTurn(t *testing.T) {
	opts, _ := newFake(t)
	a := newAgent(t, opts)
	s := open(t, a, "conv-err", session.OpenOptions{}, newHost("act"))
	err := run(t, s, "error")
	var te *copilot.TurnError
	if !errors.As(err, &te) || te.Message != "Execution failed: boom" || te.Type != "query" {
		t.Fatalf("Run = %v, want the CLI's session.error", err)
	}
	if err := run(t, s, "fine"); err != nil {
		t.Errorf("next turn: %v", err)
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

func TestConcurrentConversationsShareOneProcess(t *testing.T) {
	opts, fake := newFake(t)
	a := newAgent(t, opts)
	var wg sync.WaitGroup
	hosts := make([]*testHost, 4)
	for i := range hosts {
		hosts[i] = newHost("act")
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			s, err := a.Open(ctx, "conv-"+string(rune('a'+i)), session.OpenOptions{}, hosts[i])
			if err != nil {
				t.Error(err)
				return
			}
			for j := range 3 {
				if err := s.Run(ctx, session.Turn{Prompt: "p" + string(rune('a'+i))}); err != nil {
					t.Error(err)
					return
				}
				_ = j
			}
			if err := s.Close(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i, h := range hosts {
		want := "turn 1: echo p" + string(rune('a'+i)) + "turn 2: echo p" + string(rune('a'+i)) + "turn 3: echo p" + string(rune('a'+i))
		if got := testsupport.Text(h.Events()); got != want {
			t.Errorf("conversation %d text = %q, want %q (events crossed conversations?)", i, got, want)
		}
		if sd := testsupport.OfType[session.Shutdown](h.Events()); len(sd) != 1 || sd[0].TotalPremiumRequests != 3 {
			t.Errorf("conversation %d shutdown = %+v", i, sd)
		}
	}
	if pids := fake.pids(); len(pids) != 1 {
		t.Errorf("%d processes, want 1", len(pids))
	}
}

func TestOpenResume(t *testing.T) {
	opts, fake := newFake(t)
	a := newAgent(t, opts)
	// A conversation the CLI never saw: resume fails, create follows.
	h := newHost("act")
	s := open(t, a, "conv-r", session.OpenOptions{Resume: true}, h)
	if got := fake.methods(); !slices.Equal(got[2:], []string{"session.resume", "session.create"}) {
		t.Errorf("requests = %v", got)
	}
	if err := run(t, s, "one"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The relay restarted: the same conversation resumes with its context.
	a.Close()
	a2 := newAgent(t, opts)
	h2 := newHost("act")
	s2 := open(t, a2, "conv-r", session.OpenOptions{Resume: true}, h2)
	if err := run(t, s2, "two"); err != nil {
		t.Fatal(err)
	}
	if got := testsupport.Text(h2.Events()); got != "turn 2: echo two" {
		t.Errorf("text = %q, want the resumed context (turn 2)", got)
	}
	resumes := fake.find("session.resume")
	if len(resumes) != 2 || !strings.Contains(string(resumes[1].Params), `"sessionId"`) {
		t.Errorf("resumes = %+v", resumes)
	}
	// Opening an open conversation twice is refused.
	if _, err := a2.Open(ctx, "conv-r", session.OpenOptions{}, h2); err == nil {
		t.Error("second Open of an open conversation succeeded")
	}
}

func TestCloseWithoutCLIReportsLocalUsage(t *testing.T) {
	opts, _ := newFake(t)
	a := newAgent(t, opts)
	h := newHost("act")
	s := open(t, a, "conv-local", session.OpenOptions{}, h)
	if err := run(t, s, "hello"); err != nil {
		t.Fatal(err)
	}
	if err := run(t, s, "crash"); err == nil {
		t.Fatal("crash turn succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	sd := testsupport.OfType[session.Shutdown](h.Events())
	if len(sd) != 1 || sd[0].TotalPremiumRequests != 1 || !strings.Contains(string(sd[0].ModelMetrics), `"fake-model":{"requests":{"count":1,"cost":1}`) {
		t.Errorf("shutdown = %s", testsupport.Describe(shutdown2events(sd)))
	}
}

func shutdown2events(sd []session.Shutdown) []session.Event {
	var out []session.Event
	for _, s := range sd {
		out = append(out, s)
	}
	return out
}

func TestHandshakeProblems(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	t.Run("protocol mismatch", func(t *testing.T) {
		opts, _ := newFake(t, fakecli.EnvProtocol+"=2")
		err := copilot.Probe(ctx, opts)
		if !errors.Is(err, copilot.ErrProtocolMismatch) || !strings.Contains(err.Error(), "protocol version 2") || !strings.Contains(err.Error(), "version 3") {
			t.Errorf("Probe = %v", err)
		}
		a := newAgent(t, opts)
		if _, err := a.Open(ctx, "c", session.OpenOptions{}, newHost("act")); !errors.Is(err, copilot.ErrProtocolMismatch) {
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
		if !errors.Is(err, copilot.ErrNotSignedIn) || !strings.Contains(err.Error(), "/login") || !strings.Contains(err.Error(), "--provider-url") {
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
		if !errors.Is(err, copilot.ErrCLINotFound) || !strings.Contains(err.Error(), "npm install -g @github/copilot") {
			t.Errorf("Probe = %v", err)
		}
		a := newAgent(t, opts)
		if _, err := a.Open(ctx, "c", session.OpenOptions{}, newHost("act")); !errors.Is(err, copilot.ErrCLINotFound) {
			t.Errorf("Open = %v", err)
		}
		t.Setenv("PATH", t.TempDir())
		if err := copilot.Probe(ctx, copilot.Options{}); !errors.Is(err, copilot.ErrCLINotFound) || !strings.Contains(err.Error(), "PATH") {
			t.Errorf("Probe with no copilot on PATH = %v", err)
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

// listeningURL is a provider URL whose address takes connections (the fake
// CLI never calls it; the backend checks that it answers).
func listeningURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String() + "/v1"
}

// TestProviderDown: with your own model at an address that takes no
// connection, a turn fails at once (not after the CLI's half minute of
// retries), saying so and naming the model and the endpoint.
func TestProviderDown(t *testing.T) {
	opts, _ := newFake(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	opts.Model, opts.ProviderURL = "llama-local", down
	a := newAgent(t, opts)
	s := open(t, a, "conv-down", session.OpenOptions{}, newHost("act"))
	start := time.Now()
	err = run(t, s, "hello")
	var te *copilot.TurnError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "the provider does not answer") || !strings.Contains(err.Error(), `model "llama-local" at `+down) {
		t.Fatalf("Run = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the turn took %v to fail", d)
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
