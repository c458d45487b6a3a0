package copilot_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/copilot"
	"github.com/pilotdesk/pilotdesk/session/copilot/mockopenai"
)

// TestRealCLIThroughRelay is the end-to-end scenario of issue 4 as a client
// sees it: the real CLI behind the relay, driven over the relay's WebSocket.
func TestRealCLIThroughRelay(t *testing.T) {
	opts := realCLI(t)
	sc := newScenario(opts.WorkDir)
	mock := mockopenai.Start(sc.reply)
	t.Cleanup(mock.Close)
	opts.ProviderURL = mock.URL

	agent, err := copilot.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last-in first-out: the relay (started below) closes its
	// sessions first, then the agent stops the CLI.
	t.Cleanup(func() {
		if err := agent.Close(); err != nil {
			t.Errorf("agent.Close: %v", err)
		}
	})
	// Start the CLI before the relay's first turn so the relay's per-frame
	// wait does not include the CLI's start-up.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	started := time.Now()
	warm, err := agent.Open(ctx, "warm-up", session.OpenOptions{}, newHost("act"))
	if err != nil {
		t.Fatalf("starting the CLI: %v", err)
	}
	if err := warm.Run(ctx, session.Turn{Prompt: "Say OK."}); err != nil {
		t.Fatalf("warm-up turn: %v", err)
	}
	if err := warm.Close(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("CLI start: %v", time.Since(started))

	// The relay chooses each conversation's folder: its default is the
	// agent's work dir, where the test looks for what the tools wrote.
	srv := relaytest.Start(t, relay.Config{Agent: agent, Logger: testsupport.Logger(t), WorkDir: opts.WorkDir})
	cl := srv.Dial(t)
	conv := uuid.NewString()
	isConv := func(f relaytest.Frame) bool { return f.Field("conversationId") == conv }
	var seen []relaytest.Frame
	waitFor := func(typ string, match func(relaytest.Frame) bool) relaytest.Frame {
		t.Helper()
		f, skipped := cl.WaitForCollect(typ, func(f relaytest.Frame) bool {
			return isConv(f) && (match == nil || match(f))
		})
		seen = append(append(seen, skipped...), f)
		return f
	}
	tool := func(id string) func(relaytest.Frame) bool {
		return func(f relaytest.Frame) bool { return f.Field("toolCallId") == id }
	}

	// Turn 1 in plan: the shell tool is denied and nothing is written.
	started = time.Now()
	cl.Send("copilot:send", map[string]any{"conversationId": conv, "prompt": promptFiles, "mode": "plan"})
	denied := waitFor("copilot:tool_end", tool("call_plan"))
	if denied.Field("denied") != true || denied.Field("success") != false {
		t.Errorf("plan-mode tool_end = %s", denied.Raw)
	}
	if _, err := os.Stat(sc.planned()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v; the denied command must not have run", sc.planned(), err)
	}
	// Mid-stream switch to act; the model's next tool call waits for it.
	cl.Send("copilot:set_mode", map[string]any{"conversationId": conv, "mode": "act"})
	waitFor("copilot:mode_changed", func(f relaytest.Frame) bool { return f.Field("mode") == "act" })
	sc.openGate()
	approved := waitFor("copilot:tool_end", tool("call_act"))
	if approved.Field("denied") != false || approved.Field("success") != true {
		t.Errorf("act-mode tool_end = %s", approved.Raw)
	}
	idle := waitFor("copilot:idle", nil)
	if idle.Field("status") != "completed" {
		t.Errorf("turn 1 idle = %s", idle.Raw)
	}
	if _, err := os.Stat(sc.acted()); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
	var streamed strings.Builder
	for _, f := range seen {
		if f.Type == "copilot:delta" {
			streamed.WriteString(f.Field("content").(string))
		}
	}
	if got := streamed.String(); !strings.Contains(got, "I will create a file.") || !strings.Contains(got, "That was denied. Trying again. ") {
		t.Errorf("streamed deltas = %q", got)
	}
	t.Logf("turn 1 (plan denial, set_mode act, approval): %v", time.Since(started))

	// Turn 2: ask_user becomes copilot:user_input_request; the answer goes
	// back to the model.
	started = time.Now()
	cl.Send("copilot:send", map[string]any{"conversationId": conv, "prompt": promptAsk})
	req := waitFor("copilot:user_input_request", nil)
	var ask struct {
		RequestID     string   `json:"requestId"`
		Question      string   `json:"question"`
		Choices       []string `json:"choices"`
		AllowFreeform bool     `json:"allowFreeform"`
	}
	req.Decode(t, &ask)
	if ask.RequestID == "" || ask.Question != "Which color?" || strings.Join(ask.Choices, ",") != "red,blue" || !ask.AllowFreeform {
		t.Errorf("user_input_request = %s", req.Raw)
	}
	cl.Send("copilot:user_input_response", map[string]any{"conversationId": conv, "requestId": ask.RequestID, "answer": "blue", "wasFreeform": false})
	idle = waitFor("copilot:idle", nil)
	if idle.Field("status") != "completed" {
		t.Errorf("turn 2 idle = %s", idle.Raw)
	}
	if got := askedWith(mock.Requests()); !strings.Contains(got, "blue") {
		t.Errorf("the model got %q as the ask_user result, want the answer blue", got)
	}
	t.Logf("turn 2 (ask_user round trip): %v", time.Since(started))

	// Turn 3: copilot:abort ends a streaming turn.
	cl.Send("copilot:send", map[string]any{"conversationId": conv, "prompt": promptLong})
	waitFor("copilot:delta", func(f relaytest.Frame) bool { return f.Field("content") == "Thinking..." })
	started = time.Now()
	cl.Send("copilot:abort", map[string]any{"conversationId": conv})
	idle = waitFor("copilot:idle", nil)
	if idle.Field("status") != "aborted" {
		t.Errorf("turn 3 idle = %s", idle.Raw)
	}
	t.Logf("abort to idle: %v", time.Since(started))

	// copilot:close ends the agent session: copilot:shutdown follows.
	cl.Send("copilot:close", map[string]any{"conversationId": conv})
	shutdown := waitFor("copilot:shutdown", nil)
	metrics, _ := shutdown.Field("modelMetrics").(map[string]any)
	if _, ok := metrics["gpt-4.1"]; !ok {
		t.Errorf("shutdown = %s, want gpt-4.1's metrics", shutdown.Raw)
	}
	if _, ok := shutdown.Field("totalPremiumRequests").(float64); !ok {
		t.Errorf("shutdown = %s, want totalPremiumRequests", shutdown.Raw)
	}

	var quotas []relaytest.Frame
	for _, f := range seen {
		if f.Type == "copilot:quota" {
			quotas = append(quotas, f)
		}
	}
	if len(quotas) == 0 {
		t.Fatal("no copilot:quota")
	}
	q := quotas[0]
	if q.Field("model") != "gpt-4.1" || q.Field("cacheReadTokens") != float64(200) || q.Field("quotaSnapshots") == nil {
		t.Errorf("quota = %s", q.Raw)
	}
	// With your own model the CLI says credits are unavailable and reports
	// no nano-AIU: the relay passes the word on and invents no figure.
	if q.Field("aiCreditsStatus") != "unavailable" || q.Field("aiCredits") != nil {
		t.Errorf("quota credits = %s", q.Raw)
	}
}
