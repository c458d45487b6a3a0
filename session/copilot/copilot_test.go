package copilot_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/copilot"
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
		t.Errorf("usage = %s", testsupport.Describe(asEvents(usage)))
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
	if err := s.Run(ctx, session.Turn{Prompt: "again"}); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}

	// Agent.Close stops the process.
	pids := fake.pids()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitGone(t, pids[0], wait)
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
		t.Errorf("shutdown = %s", testsupport.Describe(asEvents(sd)))
	}
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
