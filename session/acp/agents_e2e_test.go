//go:build unix

package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/internal/mockmodel"
	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session/acp"
	"github.com/pilotdesk/pilotdesk/session/backend"
)

// The agents people run, each installed from npm (pinned; `make test`
// installs them under .tools, PILOTDESK_*_PATH overrides) and pointed at a
// loopback mock of its provider's API (internal/mockmodel), driven through
// the real relay as a client drives it. Nothing leaves the machine: each
// agent's home is a temporary dir and its model the mock.

// realAgent is how one agent is run against the mock.
type realAgent struct {
	name  string
	tool  testsupport.NPMTool
	label string // the relay's name for it, from its agentInfo
	// setup returns its command line and environment for a mock at url
	// and a home of its own.
	setup func(t *testing.T, bin, url, home string) (command string, env []string)
	// shell is its model's call of its shell tool, given the tools the
	// request offered.
	shell func(r *mockmodel.Request, command string) *mockmodel.ToolCall
	// loads: its session/load brings the context back (after a close, or
	// in a new process).
	loads bool
	// loadMayFailAfterRestart: a new agent process may not find the
	// session the last one made when it loads it in the same minute (UTC)
	// as the session was made. The Gemini CLI 0.61.0 names a session's
	// file by the minute and the id's first 8 characters, and its
	// session/load starts a new recording of the session before it reads
	// the saved one: in the same minute that recording goes to the saved
	// file and empties its chat ("No previous sessions found for this
	// project."), in a later minute to a file of its own (docs/acp.md, the
	// agents people run). Then the relay must go on in a new session and
	// say once that the context was lost; a load in a later minute must
	// bring the context back.
	loadMayFailAfterRestart bool
	// usage: it reports its turns' tokens (else the relay says it does not).
	usage bool
	// stopsAtDenial: it ends its turn on the relay's rejection (the relay
	// then says so, and the turn is completed).
	stopsAtDenial bool
}

var claudeAgent = realAgent{
	name: "claude", tool: testsupport.ClaudeACP, label: "Claude Agent (ACP)", loads: true, usage: true,
	setup: func(t *testing.T, bin, url, home string) (string, []string) {
		return quote(bin), []string{
			"ANTHROPIC_BASE_URL=" + url,
			"ANTHROPIC_API_KEY=mock-key",
			"ANTHROPIC_MODEL=claude-sonnet-4-5",
			"ANTHROPIC_SMALL_FAST_MODEL=claude-haiku-4-5",
			"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_AUTOUPDATER=1",
			"DISABLE_TELEMETRY=1",
			"DISABLE_ERROR_REPORTING=1",
		}
	},
	shell: func(r *mockmodel.Request, command string) *mockmodel.ToolCall {
		return &mockmodel.ToolCall{Name: "Bash", Args: map[string]any{"command": command, "description": "Write a file"}}
	},
}

var geminiAgent = realAgent{
	name: "gemini", tool: testsupport.GeminiCLI, label: "Gemini CLI (ACP)", loads: true, loadMayFailAfterRestart: true, usage: true,
	setup: func(t *testing.T, bin, url, home string) (string, []string) {
		settings := map[string]any{
			"privacy":   map[string]any{"usageStatisticsEnabled": false},
			"telemetry": map[string]any{"enabled": false},
			"general":   map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
			"security":  map[string]any{"folderTrust": map[string]any{"enabled": false}},
		}
		raw, _ := json.Marshal(settings)
		if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		return quote(bin) + " --acp", []string{
			"GEMINI_API_KEY=mock-key",
			"GOOGLE_GEMINI_BASE_URL=" + url,
			"GEMINI_MODEL=gemini-2.5-flash",
			"GEMINI_CLI_TRUST_WORKSPACE=true",
		}
	},
	shell: func(r *mockmodel.Request, command string) *mockmodel.ToolCall {
		return &mockmodel.ToolCall{Name: "run_shell_command", Args: map[string]any{"command": command, "description": "Write a file"}}
	},
}

var codexAgent = realAgent{
	name: "codex", tool: testsupport.CodexACP, label: "Codex (ACP)", loads: true, stopsAtDenial: true,
	setup: func(t *testing.T, bin, url, home string) (string, []string) {
		codexHome := filepath.Join(home, ".codex")
		if err := os.MkdirAll(codexHome, 0o700); err != nil {
			t.Fatal(err)
		}
		config := fmt.Sprintf(`model = "gpt-5.4"
model_provider = "mock"
approval_policy = "untrusted"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "Mock"
base_url = %q
wire_api = "responses"
env_key = "MOCK_API_KEY"
`, url+"/v1")
		if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		return quote(bin), []string{"CODEX_HOME=" + codexHome, "MOCK_API_KEY=mock-key"}
	},
	shell: func(r *mockmodel.Request, command string) *mockmodel.ToolCall {
		switch {
		case r.HasTool("shell_command"):
			return &mockmodel.ToolCall{Name: "shell_command", Args: map[string]any{"command": command}}
		case r.HasTool("exec_command"):
			return &mockmodel.ToolCall{Name: "exec_command", Args: map[string]any{"cmd": command}}
		}
		return &mockmodel.ToolCall{Name: "shell", Args: map[string]any{"command": []string{"bash", "-lc", command}}}
	},
}

// Prompts of the scenario, and the word the agent must remember.
const (
	secretWord     = "KUMQUAT"
	promptRemember = "Remember the word " + secretWord + "."
	promptRecall   = "Which word did I ask you to remember?"
	promptWrite    = "Write the file "
	promptHold     = "Think for a long time."
)

// agentScript is the mock model's script: a shell call for "Write the file
// NAME.", the remembered word when the conversation holds it, and a text
// answer after a tool result and for the agents' side calls.
func agentScript(ag realAgent, dir string) mockmodel.Handler {
	return func(r *mockmodel.Request) mockmodel.Reply {
		if len(r.Tools) == 0 {
			return mockmodel.Reply{Text: []string{"A title"}}
		}
		if _, ok := r.ToolResult(); ok {
			return mockmodel.Reply{Text: []string{"The tool ", "ran."}}
		}
		user := r.LastUser()
		switch {
		case strings.Contains(user, promptRemember):
			return mockmodel.Reply{Text: []string{"I will ", "remember it."}}
		case strings.Contains(user, promptRecall):
			if r.Said(promptRemember) {
				return mockmodel.Reply{Text: []string{"The word was ", secretWord, "."}}
			}
			return mockmodel.Reply{Text: []string{"I do not know ", "the word."}}
		case strings.Contains(user, promptWrite):
			name := strings.TrimSuffix(strings.TrimSpace(user[strings.Index(user, promptWrite)+len(promptWrite):]), ".")
			if i := strings.IndexAny(name, " \n."); i >= 0 {
				name = name[:i]
			}
			return mockmodel.Reply{Text: []string{"Writing ", name + "."}, ToolCall: ag.shell(r, "echo written > "+filepath.Join(dir, name+".txt"))}
		case strings.Contains(user, promptHold):
			return mockmodel.Reply{Text: []string{"Thinking..."}, Hold: true}
		}
		return mockmodel.Reply{Text: []string{"OK."}}
	}
}

func TestRealClaudeThroughRelay(t *testing.T) { t.Parallel(); runRealAgent(t, claudeAgent) }
func TestRealGeminiThroughRelay(t *testing.T) { t.Parallel(); runRealAgent(t, geminiAgent) }
func TestRealCodexThroughRelay(t *testing.T)  { t.Parallel(); runRealAgent(t, codexAgent) }

// agentRun is one agent's relay, restartable on the same store.
type agentRun struct {
	t     *testing.T
	opts  acp.Options
	store history.Store
	agent *acp.Agent
	srv   *relaytest.Server
	cl    *relaytest.Client
	conv  string
}

func (r *agentRun) start() {
	r.t.Helper()
	a, err := acp.New(r.opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.agent = a
	r.srv = relaytest.Start(r.t, relay.Config{Agent: a, Store: r.store, Logger: r.opts.Logger, WorkDir: r.opts.WorkDir})
	r.cl = r.srv.Dial(r.t)
}

func (r *agentRun) stop() {
	r.srv.Close()
	r.agent.Close()
}

func (r *agentRun) ofConv(match func(relaytest.Frame) bool) func(relaytest.Frame) bool {
	return func(fr relaytest.Frame) bool {
		return fr.Field("conversationId") == r.conv && (match == nil || match(fr))
	}
}

// turn sends prompt in mode and returns every frame of the conversation
// up to its idle, which it returns too.
func (r *agentRun) turn(prompt, mode string) (idle relaytest.Frame, frames []relaytest.Frame) {
	r.t.Helper()
	started := time.Now()
	r.cl.Send("copilot:send", map[string]any{"conversationId": r.conv, "prompt": prompt, "mode": mode})
	idle, frames = r.waitIdle()
	r.t.Logf("turn %q in %s: %s in %v", prompt, mode, idle.Field("status"), time.Since(started).Round(time.Millisecond))
	return idle, frames
}

func (r *agentRun) waitIdle() (relaytest.Frame, []relaytest.Frame) {
	r.t.Helper()
	var frames []relaytest.Frame
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		fr, ok := r.cl.TryNext(time.Until(deadline))
		if !ok {
			break
		}
		if fr.Field("conversationId") != r.conv {
			continue
		}
		frames = append(frames, fr)
		if fr.Type == "copilot:idle" {
			return fr, frames
		}
	}
	r.t.Fatalf("no copilot:idle; frames:\n%s", describeFrames(frames))
	return relaytest.Frame{}, nil
}

func describeFrames(frames []relaytest.Frame) string {
	var b strings.Builder
	for _, fr := range frames {
		b.Write(fr.Raw)
		b.WriteByte('\n')
	}
	return b.String()
}

func framesOf(frames []relaytest.Frame, typ string) []relaytest.Frame {
	var out []relaytest.Frame
	for _, fr := range frames {
		if fr.Type == typ {
			out = append(out, fr)
		}
	}
	return out
}

// reply is the text of the turn's copilot:message frames.
func reply(frames []relaytest.Frame) string {
	var b strings.Builder
	for _, fr := range framesOf(frames, "copilot:message") {
		s, _ := fr.Field("content").(string)
		b.WriteString(s)
		b.WriteByte('\n')
	}
	return b.String()
}

func runRealAgent(t *testing.T, ag realAgent) {
	bin := ag.tool.Find(t)
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	home := filepath.Join(dir, "home")
	for _, d := range []string{work, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mock := mockmodel.Start(agentScript(ag, work))
	defer mock.Close()
	command, env := ag.setup(t, bin, mock.URL, home)
	marker := "HOME=" + home
	var unknown []string
	var mu sync.Mutex
	watch := stderrWatch{testsupport.Logger(t).Handler(), &mu, &unknown}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		if len(unknown) > 0 {
			t.Errorf("the agent was sent a method it does not know: %q", unknown)
		}
	}()
	r := &agentRun{t: t, store: history.NewMemory(), conv: uuid.NewString(), opts: acp.Options{
		Command:    command,
		WorkDir:    work,
		Env:        append([]string{marker, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state")}, env...),
		Logger:     slog.New(watch),
		SessionMap: filepath.Join(dir, "sessions.json"),
		Limits:     backend.Limits{StartTimeout: 2 * time.Minute},
	}}
	r.start()
	defer func() {
		r.stop()
		testsupport.WaitNoProcessWithEnv(t, marker, wait)
		if nf := mock.NotFound(); len(nf) > 0 {
			t.Logf("the agent also asked the mock for: %v", nf)
		}
	}()
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(work, name))
		return err == nil
	}

	// Context, and a text turn. Its session is made during the turn.
	idle, frames := r.turn(promptRemember, "act")
	sessionMade := time.Now().UTC()
	if idle.Field("status") != "completed" || !strings.Contains(reply(frames), "remember it") {
		t.Fatalf("first turn: %s\n%s", idle.Raw, describeFrames(frames))
	}
	if got := r.agent.Label(); got != ag.label {
		t.Errorf("Label = %q, want %q", got, ag.label)
	}
	quota := framesOf(frames, "copilot:quota")
	if ag.usage && (len(quota) != 1 || quota[0].Field("inputTokens") == nil) {
		t.Errorf("usage: %d copilot:quota frames, want one with tokens\n%s", len(quota), describeFrames(frames))
	}
	if !ag.usage && (len(quota) != 1 || quota[0].Field("unreported") != true || quota[0].Field("inputTokens") != nil) {
		t.Errorf("an agent that reports no usage: want one copilot:quota saying so (unreported), with no figures\n%s", describeFrames(frames))
	}

	// Act: the shell command runs.
	idle, frames = r.turn(promptWrite+"act.", "act")
	if idle.Field("status") != "completed" || !exists("act.txt") {
		t.Errorf("act turn: %s, act.txt written: %v\n%s", idle.Raw, exists("act.txt"), describeFrames(frames))
	}
	checkToolRow(t, frames, false)

	// Plan: denied, nothing written, the turn ends cleanly.
	idle, frames = r.turn(promptWrite+"plan.", "plan")
	if idle.Field("status") != "completed" || exists("plan.txt") {
		t.Errorf("plan turn: %s, plan.txt written: %v\n%s", idle.Raw, exists("plan.txt"), describeFrames(frames))
	}
	checkToolRow(t, frames, true)
	if got := strings.Contains(reply(frames), "ends its turn when a tool call is denied"); got != ag.stopsAtDenial {
		t.Errorf("the note that the agent stops at a denied tool: %v, want %v", got, ag.stopsAtDenial)
	}

	// Approved in act, the same command is still denied in plan.
	r.turn(promptWrite+"same.", "act")
	if !exists("same.txt") {
		t.Fatal("same.txt: the approved command did not run")
	}
	os.Remove(filepath.Join(work, "same.txt"))
	idle, frames = r.turn(promptWrite+"same.", "plan")
	if idle.Field("status") != "completed" || exists("same.txt") {
		t.Errorf("the same command in plan: %s, same.txt written: %v\n%s", idle.Raw, exists("same.txt"), describeFrames(frames))
	}

	// Context across turns.
	recall := func(when string, want bool) {
		t.Helper()
		idle, frames := r.turn(promptRecall, "act")
		if got := strings.Contains(reply(frames), secretWord); idle.Field("status") != "completed" || got != want {
			t.Errorf("%s: the agent remembers the word: %v, want %v; %s\n%s", when, got, want, idle.Raw, describeFrames(frames))
		}
		// A session loaded again replays its history: none of it is news.
		if n := len(framesOf(frames, "copilot:tool_start")); n != 0 || strings.Count(reply(frames), secretWord) > 1 {
			t.Errorf("%s: the turn shows %d tool rows and replies %q: the replayed history leaked", when, n, reply(frames))
		}
	}
	recall("the next turn", true)

	// Across copilot:close: the next send loads the session again.
	r.cl.Send("copilot:close", map[string]any{"conversationId": r.conv})
	r.cl.WaitFor("copilot:shutdown", r.ofConv(nil))
	recall("after copilot:close", ag.loads)

	// Across a relay restart: a new relay and a new agent process on the
	// same store and session map.
	r.stop()
	testsupport.WaitNoProcessWithEnv(t, marker, wait)
	r.start()
	if ag.loadMayFailAfterRestart {
		loadAt := time.Now().UTC()
		laterMinute := loadAt.Truncate(time.Minute).After(sessionMade.Truncate(time.Minute))
		idle, frames := r.turn(promptRecall, "act")
		remembered := strings.Contains(reply(frames), secretWord)
		lost := 0
		for _, f := range framesOf(frames, "copilot:message") {
			if s, _ := f.Field("content").(string); strings.Contains(s, "no longer knows what was said before") {
				lost++
			}
		}
		switch {
		case idle.Field("status") != "completed" || remembered == (lost == 1) || lost > 1:
			t.Errorf("after a relay restart: remembered %v, lost-context notes %d (want the word, or one note); %s\n%s", remembered, lost, idle.Raw, describeFrames(frames))
		case laterMinute && !remembered:
			t.Errorf("after a relay restart in a later minute (session made by %s, loaded from %s): the agent could not load its session\n%s",
				sessionMade.Format(time.TimeOnly), loadAt.Format(time.TimeOnly), describeFrames(frames))
		case !remembered:
			t.Logf("after a relay restart in the minute the session was made: the agent could not load its session; the relay said so once")
		default:
			t.Logf("after a relay restart (in a later minute: %v): the agent loaded its session", laterMinute)
		}
	} else {
		recall("after a relay restart", ag.loads)
	}

	// Abort while the model streams.
	r.cl.Send("copilot:send", map[string]any{"conversationId": r.conv, "prompt": promptHold, "mode": "act"})
	r.cl.WaitFor("copilot:delta", r.ofConv(func(fr relaytest.Frame) bool {
		s, _ := fr.Field("content").(string)
		return strings.Contains(s, "Thinking")
	}))
	started := time.Now()
	r.cl.Send("copilot:abort", map[string]any{"conversationId": r.conv})
	if idle, frames := r.waitIdle(); idle.Field("status") != "aborted" {
		t.Errorf("abort: %s\n%s", idle.Raw, describeFrames(frames))
	}
	t.Logf("abort to idle: %v", time.Since(started).Round(time.Millisecond))
}

// checkToolRow: the turn ran one shell call, its row named by the command,
// denied or not as wanted.
func checkToolRow(t *testing.T, frames []relaytest.Frame, denied bool) {
	t.Helper()
	starts, ends := framesOf(frames, "copilot:tool_start"), framesOf(frames, "copilot:tool_end")
	if len(starts) != 1 || len(ends) != 1 {
		t.Errorf("tool starts %d, ends %d, want 1 each\n%s", len(starts), len(ends), describeFrames(frames))
		return
	}
	t.Logf("tool row: %s", starts[0].Raw)
	if ends[0].Field("denied") != denied || ends[0].Field("success") == denied {
		t.Errorf("tool_end = %s, want denied %v", ends[0].Raw, denied)
	}
	// Named by its command, not by a placeholder ("Terminal", "Shell").
	if name, _ := starts[0].Field("toolName").(string); !strings.Contains(name, "echo written") {
		t.Errorf("tool row named %q, want its command", name)
	}
}

// stderrWatch is a slog handler that passes records on and keeps the
// agent's stderr lines that say it was sent a method it does not know.
type stderrWatch struct {
	slog.Handler
	mu   *sync.Mutex
	seen *[]string
}

func (w stderrWatch) Handle(ctx context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "line" && strings.Contains(a.Value.String(), "Method not found") {
			w.mu.Lock()
			*w.seen = append(*w.seen, a.Value.String())
			w.mu.Unlock()
		}
		return true
	})
	return w.Handler.Handle(ctx, r)
}

func (w stderrWatch) WithAttrs(attrs []slog.Attr) slog.Handler {
	return stderrWatch{w.Handler.WithAttrs(attrs), w.mu, w.seen}
}

func (w stderrWatch) WithGroup(name string) slog.Handler {
	return stderrWatch{w.Handler.WithGroup(name), w.mu, w.seen}
}
