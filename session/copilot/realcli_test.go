package copilot_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/backend"
	"github.com/pilotdesk/pilotdesk/session/copilot"
	"github.com/pilotdesk/pilotdesk/session/copilot/mockopenai"
)

// The end-to-end tests drive the real Copilot CLI from npm, fully offline:
// its model is a loopback mock (BYOK provider), its home a temporary dir.
// They run whenever the CLI is installed (scripts/install-copilot.sh puts it
// in .tools/copilot; PILOTDESK_COPILOT_PATH overrides) and skip, saying why,
// when it is not.

// realCLI returns Options for the real CLI, or skips the test.
func realCLI(t *testing.T) copilot.Options {
	t.Helper()
	path := testsupport.CopilotCLI.Find(t)
	home := t.TempDir()
	return copilot.Options{
		Path:         path,
		Model:        "gpt-4.1",
		WorkDir:      t.TempDir(),
		ProviderType: "openai",
		ProviderKey:  "mock-key",
		Logger:       testsupport.Logger(t),
		Limits:       backend.Limits{StartTimeout: 2 * time.Minute},
		Env:          testsupport.CopilotEnv(home),
	}
}

// homeEnv is the HOME=… entry that marks the CLI processes of a test.
func homeEnv(opts copilot.Options) string {
	for _, kv := range opts.Env {
		if strings.HasPrefix(kv, "HOME=") {
			return kv
		}
	}
	return ""
}

// scenario is the mock model's script for the end-to-end tests, shared by
// the direct and the relay variants.
type scenario struct {
	dir     string        // where the shell tool writes
	actGate chan struct{} // closed by the test once the mode is act
	once    sync.Once
}

func newScenario(dir string) *scenario {
	return &scenario{dir: dir, actGate: make(chan struct{})}
}

func (sc *scenario) openGate() { sc.once.Do(func() { close(sc.actGate) }) }

func (sc *scenario) planned() string { return filepath.Join(sc.dir, "planned.txt") }
func (sc *scenario) acted() string   { return filepath.Join(sc.dir, "acted.txt") }

func bash(id, command string) mockopenai.ToolCall {
	args, _ := json.Marshal(map[string]string{"command": command, "description": "create a file"})
	return mockopenai.ToolCall{ID: id, Name: "bash", Arguments: string(args)}
}

// Prompts of the scenario.
const (
	promptFiles = "Please create the files."
	promptAsk   = "Ask me for a color."
	promptLong  = "Think for a long time."
)

func (sc *scenario) reply(r *mockopenai.Request) mockopenai.Reply {
	usage := mockopenai.Usage{PromptTokens: 1200, CompletionTokens: 30, CachedTokens: 200}
	// The conversation so far comes with every request: what to say next
	// follows from its last message.
	last := r.Last()
	if last.Role == "tool" {
		switch last.ToolCallID {
		case "call_plan":
			// The first tool was denied: say so, wait mid-stream for the
			// test to switch the mode, then try again.
			return mockopenai.Reply{
				Text:      []string{"That was denied. ", "Trying again. "},
				Wait:      sc.actGate,
				ToolCalls: []mockopenai.ToolCall{bash("call_act", "touch "+sc.acted())},
				Usage:     usage,
			}
		case "call_act":
			return mockopenai.Reply{Text: []string{"Done: ", "the file exists."}, Usage: usage}
		case "call_ask":
			return mockopenai.Reply{Text: []string{"You answered: ", last.Content}, Usage: usage}
		}
	}
	user := r.LastUser()
	switch {
	case last.Role == "user" && strings.Contains(user, promptFiles):
		return mockopenai.Reply{
			Text:      []string{"I will ", "create a file."},
			ToolCalls: []mockopenai.ToolCall{bash("call_plan", "touch "+sc.planned())},
			Usage:     usage,
		}
	case last.Role == "user" && strings.Contains(user, promptAsk):
		args, _ := json.Marshal(map[string]any{"question": "Which color?", "choices": []string{"red", "blue"}})
		return mockopenai.Reply{
			Text:      []string{"Let me ask. "},
			ToolCalls: []mockopenai.ToolCall{{ID: "call_ask", Name: "ask_user", Arguments: string(args)}},
			Usage:     usage,
		}
	case last.Role == "user" && strings.Contains(user, promptLong):
		return mockopenai.Reply{Text: []string{"Thinking..."}, Hold: true}
	}
	return mockopenai.Reply{Text: []string{"OK."}, Usage: usage}
}

// askedWith finds the request that carried the ask_user answer to the model.
func askedWith(requests []*mockopenai.Request) string {
	for _, r := range requests {
		if res, ok := r.ToolResult("call_ask"); ok {
			return res
		}
	}
	return ""
}

func TestRealCLIThroughAgent(t *testing.T) {
	opts := realCLI(t)
	sc := newScenario(opts.WorkDir)
	mock := mockopenai.Start(sc.reply)
	defer mock.Close()
	opts.ProviderURL = mock.URL

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	started := time.Now()
	if err := copilot.Probe(ctx, opts); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	t.Logf("probe (start, handshake, stop): %v", time.Since(started))

	a, err := copilot.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	h := newHost("plan")
	h.OnEmit = func(h *testHost, e session.Event) {
		// The user switches to act mid-stream, as soon as the plan-mode
		// denial shows; the model's next tool call waits for it.
		if end, ok := e.(session.ToolEnd); ok && end.ToolCallID == "call_plan" {
			h.SetMode("act")
			sc.openGate()
		}
	}
	h.OnAsk = func(ctx context.Context, h *testHost, req session.InputRequest) (session.Answer, error) {
		return session.Answer{Text: "blue", Index: 1}, nil
	}
	started = time.Now()
	s, err := a.Open(ctx, "e2e-conversation", session.OpenOptions{}, h)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Logf("open (start, handshake, session.create): %v", time.Since(started))

	// Turn 1: denied in plan, approved after the switch to act.
	started = time.Now()
	if err := s.Run(ctx, session.Turn{Prompt: promptFiles}); err != nil {
		t.Fatalf("turn 1: %v", err)
	}
	t.Logf("turn 1 (two tools): %v", time.Since(started))
	events := h.Events()
	if got := testsupport.Text(events); !strings.Contains(got, "I will create a file.") || !strings.Contains(got, "Done: the file exists.") {
		t.Errorf("streamed text = %q", got)
	}
	if n := len(testsupport.OfType[session.Delta](events)); n < 5 {
		t.Errorf("%d deltas, want the text streamed in pieces", n)
	}
	ends := map[string]session.ToolEnd{}
	for _, e := range testsupport.OfType[session.ToolEnd](events) {
		ends[e.ToolCallID] = e
	}
	if e := ends["call_plan"]; !e.Denied || e.Success || !strings.Contains(e.Result, session.PlanDenialReason) {
		t.Errorf("plan-mode tool end = %+v, want denied with the plan reason", e)
	}
	if e := ends["call_act"]; e.Denied || !e.Success {
		t.Errorf("act-mode tool end = %+v, want approved and run", e)
	}
	if _, err := os.Stat(sc.planned()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v; the denied command must not have run", sc.planned(), err)
	}
	if _, err := os.Stat(sc.acted()); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
	if res, _ := lastRequestWith(mock.Requests(), "call_plan"); !strings.Contains(res, session.PlanDenialReason) {
		t.Errorf("the model saw %q as the denied tool's result", res)
	}

	// Turn 2: ask_user goes to the Host and the answer reaches the model.
	started = time.Now()
	if err := s.Run(ctx, session.Turn{Prompt: promptAsk}); err != nil {
		t.Fatalf("turn 2: %v", err)
	}
	t.Logf("turn 2 (ask_user): %v", time.Since(started))
	asks := h.Asks()
	if len(asks) != 1 || asks[0].Question != "Which color?" || strings.Join(asks[0].Choices, ",") != "red,blue" {
		t.Errorf("asks = %+v", asks)
	}
	if got := askedWith(mock.Requests()); !strings.Contains(got, "blue") {
		t.Errorf("the model got %q as the ask_user result, want the answer blue", got)
	}
	if got := testsupport.Text(h.Events()); !strings.Contains(got, "You answered: ") {
		t.Errorf("text = %q", got)
	}

	// Turn 3: abort while the model streams.
	runCtx, abort := context.WithCancel(ctx)
	done := make(chan error, 1)
	before := len(h.Events())
	go func() { done <- s.Run(runCtx, session.Turn{Prompt: promptLong}) }()
	h.WaitFor(t, wait, "the long turn's first delta", func(ev []session.Event) bool {
		return len(ev) > before && strings.Contains(testsupport.Text(ev[before:]), "Thinking...")
	})
	started = time.Now()
	abort()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("aborted turn: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("the aborted turn did not end")
	}
	t.Logf("abort to idle: %v", time.Since(started))

	// The session still works after the abort.
	if err := s.Run(ctx, session.Turn{Prompt: "Say OK."}); err != nil {
		t.Fatalf("turn after the abort: %v", err)
	}

	usage := testsupport.OfType[session.Usage](h.Events())
	if len(usage) == 0 {
		t.Fatal("no usage reported")
	}
	u := usage[0]
	if u.Model != "gpt-4.1" || u.InputTokens == nil || *u.InputTokens != 1200 || u.OutputTokens == nil || *u.OutputTokens != 30 ||
		u.CacheReadTokens == nil || *u.CacheReadTokens != 200 {
		t.Errorf("usage = %s", testsupport.Describe(asEvents(usage[:1])))
	}

	started = time.Now()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	sd := testsupport.OfType[session.Shutdown](h.Events())
	if len(sd) != 1 || !strings.Contains(string(sd[0].ModelMetrics), `"gpt-4.1"`) {
		t.Errorf("shutdown = %s", testsupport.Describe(asEvents(sd)))
	}
	t.Logf("session close (detach, shutdown report): %v", time.Since(started))
	if runtime.GOOS == "linux" && len(testsupport.ProcessesWithEnv(homeEnv(opts))) == 0 {
		t.Error("no CLI process found by its environment: the leftover check below would prove nothing")
	}
	started = time.Now()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("agent close (CLI stopped): %v", time.Since(started))
	// Neither the npm loader nor the native binary it started is left.
	testsupport.WaitNoProcessWithEnv(t, homeEnv(opts), wait)
	if nf := mock.NotFound(); len(nf) > 0 {
		t.Logf("the CLI also asked the mock for: %v", nf)
	}
}

// lastRequestWith returns the tool result for callID in the last request
// that carried it.
func lastRequestWith(requests []*mockopenai.Request, callID string) (string, bool) {
	for i := len(requests) - 1; i >= 0; i-- {
		if res, ok := requests[i].ToolResult(callID); ok {
			return res, true
		}
	}
	return "", false
}
