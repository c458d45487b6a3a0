//go:build unix

package acp_test

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
	"github.com/pilotdesk/pilotdesk/session/acp"
	"github.com/pilotdesk/pilotdesk/session/backend"
	"github.com/pilotdesk/pilotdesk/session/copilot/mockopenai"
)

// The end-to-end tests drive a real ACP agent fully offline: the Copilot
// CLI from npm in its ACP mode (`copilot --acp`), its model a loopback mock
// given by environment (BYOK), its home a temporary dir. They run whenever
// the CLI is installed (scripts/install-copilot.sh puts it in .tools/copilot,
// which `make test` runs; PILOTDESK_COPILOT_PATH overrides) and skip, saying
// why, when it is not.

// realCopilot returns Options that run `copilot --acp` against the mock at
// mockURL, or skips the test.
func realCopilot(t *testing.T, mockURL string) (acp.Options, string) {
	t.Helper()
	loader := testsupport.CopilotCLI.Find(t)
	command := quote(loader) + " --acp"
	if strings.HasSuffix(loader, ".js") {
		command = "node " + command // the npm loader, as npm's bin link runs it
	}
	home := t.TempDir()
	return acp.Options{
		Command:    command,
		WorkDir:    t.TempDir(),
		Logger:     testsupport.Logger(t),
		SessionMap: filepath.Join(home, "sessions.json"),
		Limits:     backend.Limits{StartTimeout: 2 * time.Minute},
		Env: append(testsupport.CopilotEnv(home),
			// BYOK, which ACP mode takes from the environment only.
			"COPILOT_PROVIDER_BASE_URL="+mockURL,
			"COPILOT_PROVIDER_API_KEY=mock-key",
			"COPILOT_MODEL=gpt-4.1",
			"COPILOT_AUTO_UPDATE=false",
			"COPILOT_OFFLINE=true",
		),
	}, "HOME=" + home
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Prompts of the real agent's scenario.
const (
	promptHello  = "Say hello."
	promptPlan   = "Create the plan file."
	promptSame   = "Write same.txt."
	promptSwitch = "Stream, then create a file."
	promptLong   = "Think for a long time."
)

// realScenario is the mock model's script.
type realScenario struct {
	dir  string
	gate chan struct{} // closed by the test once the mode is act
	once sync.Once
	mu   sync.Mutex
	n    int // tool call ids
}

func (sc *realScenario) open() { sc.once.Do(func() { close(sc.gate) }) }

func (sc *realScenario) bash(command string) mockopenai.ToolCall {
	sc.mu.Lock()
	sc.n++
	id := "call_" + string(rune('a'+sc.n))
	sc.mu.Unlock()
	args, _ := json.Marshal(map[string]string{"command": command, "description": "write a file"})
	return mockopenai.ToolCall{ID: id, Name: "bash", Arguments: string(args)}
}

func (sc *realScenario) reply(r *mockopenai.Request) mockopenai.Reply {
	usage := mockopenai.Usage{PromptTokens: 1200, CompletionTokens: 30, CachedTokens: 200}
	last := r.Last()
	if last.Role == "tool" {
		return mockopenai.Reply{Text: []string{"The tool ", "ran."}, Usage: usage}
	}
	if last.Role != "user" {
		return mockopenai.Reply{Text: []string{"OK."}, Usage: usage}
	}
	user := r.LastUser()
	switch {
	case strings.Contains(user, promptHello):
		return mockopenai.Reply{Text: []string{"Hello ", "from ", "the mock."}, Usage: usage}
	case strings.Contains(user, promptPlan):
		return mockopenai.Reply{Text: []string{"Creating it."}, ToolCalls: []mockopenai.ToolCall{sc.bash("touch " + filepath.Join(sc.dir, "planned.txt"))}, Usage: usage}
	case strings.Contains(user, promptSame):
		return mockopenai.Reply{Text: []string{"Writing it."}, ToolCalls: []mockopenai.ToolCall{sc.bash("echo same > " + filepath.Join(sc.dir, "same.txt"))}, Usage: usage}
	case strings.Contains(user, promptSwitch):
		return mockopenai.Reply{Text: []string{"Working ", "on it. "}, Wait: sc.gate,
			ToolCalls: []mockopenai.ToolCall{sc.bash("touch " + filepath.Join(sc.dir, "switched.txt"))}, Usage: usage}
	case strings.Contains(user, promptLong):
		return mockopenai.Reply{Text: []string{"Thinking..."}, Hold: true}
	}
	return mockopenai.Reply{Text: []string{"OK."}, Usage: usage}
}

func TestRealCopilotACP(t *testing.T) {
	sc := &realScenario{gate: make(chan struct{})}
	mock := mockopenai.Start(sc.reply)
	defer mock.Close()
	opts, marker := realCopilot(t, mock.URL)
	sc.dir = opts.WorkDir

	a, err := acp.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h := newHost("act")
	started := time.Now()
	s, err := a.Open(ctx, "e2e", session.OpenOptions{}, h)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Logf("open (start, initialize, session/new): %v", time.Since(started))
	// The list names it as it names itself in initialize: "Copilot",
	// told from the Copilot CLI backend by "(ACP)".
	if got := a.Label(); got != "Copilot (ACP)" {
		t.Errorf("Label = %q, want Copilot (ACP)", got)
	}
	turn := func(prompt string) ([]session.Event, error) {
		t.Helper()
		n := len(h.Events())
		started := time.Now()
		err := s.Run(ctx, session.Turn{Prompt: prompt})
		t.Logf("turn %q in %s: %v", prompt, h.Mode(), time.Since(started))
		return h.Since(n), err
	}

	// A text turn streams in pieces and reports its usage.
	events, err := turn(promptHello)
	if err != nil {
		t.Fatalf("text turn: %v", err)
	}
	if got := testsupport.Text(events); got != "Hello from the mock." || len(testsupport.OfType[session.Delta](events)) < 2 {
		t.Errorf("text turn streamed %q in %d deltas", got, len(testsupport.OfType[session.Delta](events)))
	}
	if msgs := testsupport.OfType[session.Message](events); len(msgs) != 1 || msgs[0].Content != "Hello from the mock." {
		t.Errorf("messages = %+v", msgs)
	}
	checkUsage(t, events)

	// Plan: the shell tool is asked about, denied, and nothing is written.
	h.SetMode("plan")
	events, err = turn(promptPlan)
	if err != nil {
		t.Fatalf("plan turn: %v", err)
	}
	ends := testsupport.OfType[session.ToolEnd](events)
	if len(ends) != 1 || !ends[0].Denied || ends[0].Success {
		t.Errorf("plan tool ends = %+v, want one denied", ends)
	}
	checkTextBeforeTool(t, events, "Creating it.")
	if _, err := os.Stat(filepath.Join(sc.dir, "planned.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("planned.txt: %v; the denied command must not run", err)
	}

	// The allow_always trap: approved in act, the same command is asked
	// about again in plan and denied.
	same := filepath.Join(sc.dir, "same.txt")
	h.SetMode("act")
	asked := len(h.Permissions())
	if _, err := turn(promptSame); err != nil {
		t.Fatalf("act turn: %v", err)
	}
	if _, err := os.Stat(same); err != nil {
		t.Fatalf("the approved command did not run: %v", err)
	}
	os.Remove(same)
	h.SetMode("plan")
	events, err = turn(promptSame)
	if err != nil {
		t.Fatalf("the repeated command in plan: %v", err)
	}
	if n := len(h.Permissions()) - asked; n != 2 {
		t.Errorf("the agent asked %d times for the same command, want 2 (never allow_always)", n)
	}
	if ends := testsupport.OfType[session.ToolEnd](events); len(ends) != 1 || !ends[0].Denied {
		t.Errorf("repeated command's tool end = %+v, want denied", ends)
	}
	if _, err := os.Stat(same); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("same.txt: %v; the repeated command must be denied in plan", err)
	}

	// A switch to act while the model streams applies to its next tool.
	h.OnEmit = func(h *testHost, e session.Event) {
		if d, ok := e.(session.Delta); ok && strings.Contains(d.Content, "Working") {
			h.SetMode("act")
			sc.open()
		}
	}
	if _, err := turn(promptSwitch); err != nil {
		t.Fatalf("switch turn: %v", err)
	}
	h.OnEmit = nil
	if _, err := os.Stat(filepath.Join(sc.dir, "switched.txt")); err != nil {
		t.Errorf("the tool after the switch to act did not run: %v", err)
	}

	// Abort while the model streams; the session goes on.
	runCtx, abort := context.WithCancel(ctx)
	done := make(chan error, 1)
	n := len(h.Events())
	go func() { done <- s.Run(runCtx, session.Turn{Prompt: promptLong}) }()
	h.WaitFor(t, wait, "the long turn's text", func(ev []session.Event) bool { return strings.Contains(testsupport.Text(ev[n:]), "Thinking...") })
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
	t.Logf("abort to end of turn: %v", time.Since(started))
	events, err = turn(promptHello)
	if err != nil || testsupport.Text(events) != "Hello from the mock." {
		t.Errorf("the turn after the abort: %v, %q", err, testsupport.Text(events))
	}
	checkUsage(t, events)

	if err := s.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if runtime.GOOS == "linux" && len(testsupport.ProcessesWithEnv(marker)) == 0 {
		t.Error("no agent process found by its environment: the check below would prove nothing")
	}
	started = time.Now()
	a.Close()
	t.Logf("agent close: %v", time.Since(started))
	testsupport.WaitNoProcessWithEnv(t, marker, wait) // neither the npm loader nor the native binary
	if nf := mock.NotFound(); len(nf) > 0 {
		t.Logf("the agent also asked the mock for: %v", nf)
	}
}

// checkTextBeforeTool: the text the model wrote before its tool call is a
// message of its own, before the tool's row (the permission request must
// not overtake it).
func checkTextBeforeTool(t *testing.T, events []session.Event, text string) {
	t.Helper()
	got := shape(events)
	msg, start := -1, -1
	for i, e := range got {
		if e == "message:"+text && msg < 0 {
			msg = i
		}
		if strings.HasPrefix(e, "start:") && start < 0 {
			start = i
		}
	}
	if msg < 0 || start < 0 || msg > start {
		t.Errorf("events = %q, want the message %q before the tool", got, text)
	}
}

// checkUsage: one usage report per turn, of the turn alone (copilot's
// answer counts the whole session).
func checkUsage(t *testing.T, events []session.Event) {
	t.Helper()
	u := testsupport.OfType[session.Usage](events)
	if len(u) != 1 {
		t.Errorf("usage reports = %d, want 1", len(u))
		return
	}
	if in := deref(u[0].InputTokens); in <= 0 || in > 1200 {
		t.Errorf("usage input tokens = %d, want the turn's one model call (≤ 1200)", in)
	}
	if out := deref(u[0].OutputTokens); out <= 0 {
		t.Errorf("usage output tokens = %d", out)
	}
}

// realOpencode returns Options that run `opencode acp` against the mock at
// mockURL, or skips the test. opencode takes its provider from a JSON
// config in the environment; "permission": "ask" makes it ask before bash
// and edits, which by default it runs unasked.
func realOpencode(t *testing.T, mockURL string) (acp.Options, string) {
	t.Helper()
	bin := testsupport.Opencode.Find(t)
	config, _ := json.Marshal(map[string]any{
		"provider": map[string]any{"mock": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "Mock",
			"options": map[string]any{"baseURL": mockURL, "apiKey": "mock-key"},
			"models":  map[string]any{"gpt-4.1": map[string]any{"name": "gpt-4.1", "tool_call": true}},
		}},
		"model":       "mock/gpt-4.1",
		"small_model": "mock/gpt-4.1",
		"permission":  map[string]any{"bash": "ask", "edit": "ask", "webfetch": "ask"},
		"autoupdate":  false,
		"share":       "disabled",
	})
	home := t.TempDir()
	return acp.Options{
		Command: quote(bin) + " acp",
		WorkDir: t.TempDir(),
		Logger:  testsupport.Logger(t),
		Limits:  backend.Limits{StartTimeout: 2 * time.Minute},
		Env: []string{
			"HOME=" + home,
			"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
			"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
			"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
			"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
			"OPENCODE_CONFIG_CONTENT=" + string(config),
			"OPENCODE_DISABLE_AUTOUPDATE=1",
			"OPENCODE_DISABLE_MODELS_FETCH=1",
			"OPENCODE_DISABLE_SHARE=1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
			"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
			"npm_config_offline=true", // else it asks the npm registry for its plugins at start
		},
	}, "HOME=" + home
}

// TestRealOpencodeACP runs the text turn and the plan denial against
// another agent, opencode, to show that nothing is Copilot's.
func TestRealOpencodeACP(t *testing.T) {
	sc := &realScenario{gate: make(chan struct{})}
	mock := mockopenai.Start(func(r *mockopenai.Request) mockopenai.Reply {
		if len(r.Tools) == 0 {
			// opencode names a session with a tool-less call first.
			return mockopenai.Reply{Text: []string{"A title"}}
		}
		return sc.reply(r)
	})
	defer mock.Close()
	opts, marker := realOpencode(t, mock.URL)
	sc.dir = opts.WorkDir

	a, err := acp.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h := newHost("act")
	started := time.Now()
	s, err := a.Open(ctx, "e2e", session.OpenOptions{}, h)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Logf("open (start, initialize, session/new): %v", time.Since(started))
	// The list names it as it names itself in initialize.
	if got := a.Label(); got != "OpenCode (ACP)" {
		t.Errorf("Label = %q, want OpenCode (ACP)", got)
	}

	started = time.Now()
	if err := s.Run(ctx, session.Turn{Prompt: promptHello}); err != nil {
		t.Fatalf("text turn: %v", err)
	}
	t.Logf("text turn: %v", time.Since(started))
	if got := testsupport.Text(h.Events()); got != "Hello from the mock." {
		t.Errorf("text turn streamed %q", got)
	}

	h.SetMode("plan")
	n := len(h.Events())
	started = time.Now()
	if err := s.Run(ctx, session.Turn{Prompt: promptPlan}); err != nil {
		t.Fatalf("plan turn: %v", err)
	}
	t.Logf("plan turn: %v", time.Since(started))
	events := h.Since(n)
	if len(h.Permissions()) != 1 {
		t.Errorf("the agent asked %d times, want once", len(h.Permissions()))
	}
	ends := testsupport.OfType[session.ToolEnd](events)
	if len(ends) != 1 || !ends[0].Denied || ends[0].Success {
		t.Errorf("plan tool ends = %+v, want one denied; events:\n%s", ends, testsupport.Describe(events))
	}
	if _, err := os.Stat(filepath.Join(sc.dir, "planned.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("planned.txt: %v; the denied command must not run", err)
	}
	checkTextBeforeTool(t, events, "Creating it.")
	a.Close()
	testsupport.WaitNoProcessWithEnv(t, marker, wait)
}
