// Package fakeagent is an ACP agent for tests: a process that speaks the
// Agent Client Protocol on stdio (through the SDK's agent side) and plays a
// scenario chosen by the prompt's first word. The test binary re-executes
// itself with EnvEnable=1 and calls Main.
//
// Prompts:
//
//	hello      three text chunks; usage in the answer
//	echo       "turn N: PROMPT", N counting the session's turns (kept in
//	           EnvState, so a loaded session goes on counting)
//	messages   chunks carrying the agent's own message ids: two messages
//	tool F     a shell tool that asks permission; allowed, it creates the
//	           file F in the cwd; denied, the turn ends as copilot's does
//	twotools   two tools asking permission one after the other, in one turn
//	diff       an edit tool whose content is a diff
//	noask      a shell tool that runs without asking
//	read       a read tool that runs without asking
//	hang       streams, then waits for session/cancel
//	hangperm   asks permission, and on session/cancel ends the turn at once
//	           without waiting for the answer (as copilot does)
//	crash      streams, then exits with status 3
//	error      answers the prompt with a JSON-RPC error
//	refusal    stops with stopReason refusal
//	unknown    session updates of kinds nobody knows, thoughts, a plan,
//	           usage_update, then text
//	orphan     starts `sleep` in its process group and says its pid
//	elicit K   text, then an elicitation/create of form K (see elicitForms),
//	           then says "answer: " and the client's answer as JSON
//	think      thought chunks, a plan, its update, then text
//	late       as opencode: a shell tool announced pending with empty
//	           arguments, which an update fills in; it asks permission, and
//	           allowed creates late.txt in the cwd
package fakeagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// Environment of the fake.
const (
	EnvEnable     = "PILOTDESK_FAKE_ACP"  // "1": act as the fake agent
	EnvLog        = "FAKE_ACP_LOG"        // file: one JSON line per request received and permission answer
	EnvState      = "FAKE_ACP_STATE"      // dir: the sessions (for session/load)
	EnvNoLoad     = "FAKE_ACP_NO_LOAD"    // "1": do not offer session/load
	EnvAuth       = "FAKE_ACP_AUTH"       // "1": session/new says authentication is required
	EnvOptions    = "FAKE_ACP_OPTIONS"    // permission option kinds offered, comma-separated
	EnvName       = "FAKE_ACP_NAME"       // the agent's name in initialize (default fake-acp)
	EnvCumulative = "FAKE_ACP_CUMULATIVE" // "1": usage is the session's total so far, as copilot's
	EnvExitEarly  = "FAKE_ACP_EXIT_EARLY" // "1": print to stderr and exit 7 before reading
	EnvProtocol   = "FAKE_ACP_PROTOCOL"   // the protocol version to answer (default 1)
	EnvClose      = "FAKE_ACP_NO_CLOSE"   // "1": do not offer session/close
	EnvMute       = "FAKE_ACP_MUTE"       // "1": never answer extension requests (as a broken agent)
	EnvTitle      = "FAKE_ACP_TITLE"      // the agent's title in initialize (default none)
	EnvModes      = "FAKE_ACP_MODES"      // "1": sessions have modes default and plan, as Claude's
	EnvLoadFails  = "FAKE_ACP_LOAD_FAILS" // "1": session/load fails, as the Gemini CLI's
)

// LogEntry is one line of the EnvLog file.
type LogEntry struct {
	PID     int             `json:"pid"`
	Method  string          `json:"method"` // a request's method, or "permission"
	Session string          `json:"session,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Outcome string          `json:"outcome,omitempty"` // permission: the option id picked, or "cancelled"
}

// Main runs the fake until stdin closes and returns the exit code.
func Main() int {
	if os.Getenv(EnvExitEarly) == "1" {
		fmt.Fprintln(os.Stderr, "fake acp: cannot start (on purpose)")
		return 7
	}
	out := &lockedWriter{w: os.Stdout}
	a := &agent{out: out, state: os.Getenv(EnvState), usage: map[sdk.SessionId]sdk.Usage{}}
	a.replies = newReplies(os.Stdin)
	conn := sdk.NewAgentSideConnection(a, out, a.replies.reader())
	a.conn = conn
	<-conn.Done()
	return 0
}

// lockedWriter lets the fake write raw lines (update kinds the SDK cannot
// encode) between the SDK's own, each line whole.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

type agent struct {
	conn  *sdk.AgentSideConnection
	out   *lockedWriter
	state string

	mu    sync.Mutex
	usage map[sdk.SessionId]sdk.Usage // cumulative usage per session, this process

	// replies takes the answers to the requests the fake writes itself
	// (elicitation/create: the SDK's agent side cannot send one that names
	// its session).
	replies *replies
}

var (
	_ sdk.Agent       = (*agent)(nil)
	_ sdk.AgentLoader = (*agent)(nil)
)

func (a *agent) log(e LogEntry) {
	path := os.Getenv(EnvLog)
	if path == "" {
		return
	}
	e.PID = os.Getpid()
	line, _ := json.Marshal(e)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.Write(append(line, '\n'))
}

func (a *agent) logRequest(method string, sid sdk.SessionId, params any) {
	raw, _ := json.Marshal(params)
	a.log(LogEntry{Method: method, Session: string(sid), Params: raw})
}

func (a *agent) Initialize(_ context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	a.logRequest(sdk.AgentMethodInitialize, "", p)
	version := sdk.ProtocolVersionNumber
	if v, err := strconv.Atoi(os.Getenv(EnvProtocol)); err == nil {
		version = v
	}
	name := os.Getenv(EnvName)
	if name == "" {
		name = "fake-acp"
	}
	caps := sdk.AgentCapabilities{LoadSession: os.Getenv(EnvNoLoad) != "1"}
	if os.Getenv(EnvClose) != "1" {
		caps.SessionCapabilities.Close = &sdk.SessionCloseCapabilities{}
	}
	info := &sdk.Implementation{Name: name, Version: "0.0.1"}
	if title := os.Getenv(EnvTitle); title != "" {
		info.Title = &title
	}
	return sdk.InitializeResponse{
		ProtocolVersion:   sdk.ProtocolVersion(version),
		AgentCapabilities: caps,
		AgentInfo:         info,
		AuthMethods: []sdk.AuthMethod{{Agent: &sdk.AuthMethodAgent{
			Id: "fake-login", Name: "Log in to the fake", Description: sdk.Ptr("Run `fake-acp login` in a terminal"),
		}}},
	}, nil
}

// HandleExtensionMethod answers "method not found", as ACP asks of an
// agent for a request it does not know; with EnvMute it never answers.
func (a *agent) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	a.logRequest(method, "", params)
	if os.Getenv(EnvMute) == "1" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, sdk.NewMethodNotFound(method)
}

func (a *agent) Authenticate(context.Context, sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

func (a *agent) Logout(context.Context, sdk.LogoutRequest) (sdk.LogoutResponse, error) {
	return sdk.LogoutResponse{}, nil
}

func (a *agent) Cancel(_ context.Context, p sdk.CancelNotification) error {
	a.logRequest(sdk.AgentMethodSessionCancel, p.SessionId, p)
	return nil // the SDK cancels the prompt's context
}

func (a *agent) CloseSession(_ context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	a.logRequest(sdk.AgentMethodSessionClose, p.SessionId, p)
	return sdk.CloseSessionResponse{}, nil
}

func (a *agent) ListSessions(context.Context, sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, nil
}

func (a *agent) ResumeSession(context.Context, sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionResume)
}

func (a *agent) SetSessionConfigOption(_ context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	a.logRequest(sdk.AgentMethodSessionSetConfigOption, "", p)
	return sdk.SetSessionConfigOptionResponse{}, nil
}

func (a *agent) SetSessionMode(_ context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	a.logRequest(sdk.AgentMethodSessionSetMode, p.SessionId, p)
	return sdk.SetSessionModeResponse{}, nil
}

func (a *agent) NewSession(_ context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	a.logRequest(sdk.AgentMethodSessionNew, "", p)
	if os.Getenv(EnvAuth) == "1" {
		return sdk.NewSessionResponse{}, sdk.NewAuthRequired(nil)
	}
	b := make([]byte, 8)
	rand.Read(b)
	id := sdk.SessionId("sess-" + hex.EncodeToString(b))
	a.save(id, history{Cwd: p.Cwd})
	return sdk.NewSessionResponse{SessionId: id, Modes: modes()}, nil
}

// modes are the sessions' modes with EnvModes, else none.
func modes() *sdk.SessionModeState {
	if os.Getenv(EnvModes) != "1" {
		return nil
	}
	return &sdk.SessionModeState{CurrentModeId: "default", AvailableModes: []sdk.SessionMode{
		{Id: "default", Name: "Default"}, {Id: "plan", Name: "Plan Mode"}}}
}

// history is a session as the fake keeps it in EnvState.
type history struct {
	Cwd   string   `json:"cwd"`
	Turns int      `json:"turns"`
	Lines []string `json:"lines"` // "user: …" and "agent: …"
}

func (a *agent) file(id sdk.SessionId) string {
	return filepath.Join(a.state, string(id)+".json")
}

func (a *agent) load(id sdk.SessionId) (history, bool) {
	var h history
	if a.state == "" {
		return h, false
	}
	data, err := os.ReadFile(a.file(id))
	if err != nil || json.Unmarshal(data, &h) != nil {
		return h, false
	}
	return h, true
}

func (a *agent) save(id sdk.SessionId, h history) {
	if a.state == "" {
		return
	}
	data, _ := json.Marshal(h)
	os.WriteFile(a.file(id), data, 0o644)
}

func (a *agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	a.logRequest(sdk.AgentMethodSessionLoad, p.SessionId, p)
	h, ok := a.load(p.SessionId)
	if !ok || os.Getenv(EnvLoadFails) == "1" {
		return sdk.LoadSessionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "no such session"})
	}
	// Replay the history before answering, as agents do.
	for _, l := range h.Lines {
		if text, ok := strings.CutPrefix(l, "user: "); ok {
			a.send(ctx, p.SessionId, sdk.UpdateUserMessageText(text))
		} else if text, ok := strings.CutPrefix(l, "agent: "); ok {
			a.send(ctx, p.SessionId, sdk.UpdateAgentMessageText(text))
		}
	}
	return sdk.LoadSessionResponse{Modes: modes()}, nil
}

func (a *agent) send(ctx context.Context, id sdk.SessionId, u sdk.SessionUpdate) {
	a.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: id, Update: u})
}

func (a *agent) say(ctx context.Context, id sdk.SessionId, texts ...string) {
	for _, t := range texts {
		a.send(ctx, id, sdk.UpdateAgentMessageText(t))
	}
}

// raw writes a session/update whose update the SDK could not encode.
func (a *agent) raw(id sdk.SessionId, update string) {
	fmt.Fprintf(a.out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":%s}}`+"\n", id, update)
}

func (a *agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	a.logRequest(sdk.AgentMethodSessionPrompt, p.SessionId, p)
	var text string
	for _, b := range p.Prompt {
		if b.Text != nil {
			text += b.Text.Text
		}
	}
	h, _ := a.load(p.SessionId)
	h.Turns++
	h.Lines = append(h.Lines, "user: "+text)
	defer func() { a.save(p.SessionId, h) }()
	t := &turn{ctx: ctx, id: p.SessionId, text: text, fields: strings.Fields(text), h: &h}
	t.end = sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn, Usage: a.account(t.id, 100, 10, 5)}
	word := ""
	if len(t.fields) > 0 {
		word = t.fields[0]
	}
	switch word {
	case "tool", "twotools", "diff", "noask", "read", "codextool", "placeholder", "noaskfail", "late":
		return a.toolTurn(t, word)
	case "hang", "hangperm", "crash", "unknown", "elicit", "think", "orphan":
		return a.controlTurn(t, word)
	}
	return a.replyTurn(t, word)
}

// turn is a prompt being played: its session, its text (fields: its
// words; the first names the scenario), the session's history, and the
// answer of a turn that ends normally.
type turn struct {
	ctx    context.Context
	id     sdk.SessionId
	text   string
	fields []string
	h      *history
	end    sdk.PromptResponse
}

// toolTurn plays the prompts whose turn runs a tool call, asked or not.
func (a *agent) toolTurn(t *turn, word string) (sdk.PromptResponse, error) {
	ctx, id, h, fields, end := t.ctx, t.id, t.h, t.fields, t.end
	switch word {
	case "tool":
		name := "tool.txt"
		if len(fields) > 1 {
			name = fields[1]
		}
		a.say(ctx, id, "I will create "+name+".")
		if !a.tool(ctx, id, "t1", name, h.Cwd) {
			return end, nil // denied: the turn ends, as copilot's and opencode's do
		}
		a.say(ctx, id, "Done.")
	case "twotools":
		a.tool(ctx, id, "t1", "first.txt", h.Cwd)
		a.say(ctx, id, "Trying again.")
		a.tool(ctx, id, "t2", "second.txt", h.Cwd)
	case "diff":
		a.send(ctx, id, sdk.StartToolCall("d1", "Edit notes.txt", sdk.WithStartKind(sdk.ToolKindEdit), sdk.WithStartStatus(sdk.ToolCallStatusPending),
			sdk.WithStartRawInput(map[string]any{"path": "notes.txt"}),
			sdk.WithStartContent([]sdk.ToolCallContent{sdk.ToolDiffContent("/w/notes.txt", "one\nTWO\nthree\n", "one\ntwo\nthree\n")})))
		if a.ask(ctx, id, "d1", "Edit notes.txt", sdk.ToolKindEdit, map[string]any{"path": "notes.txt"}) {
			a.send(ctx, id, sdk.UpdateToolCall("d1", sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted)))
		} else {
			a.send(ctx, id, sdk.UpdateToolCall("d1", sdk.WithUpdateStatus(sdk.ToolCallStatusFailed)))
		}
	case "noask", "read":
		callID, kind, title := sdk.ToolCallId("n1"), sdk.ToolKindExecute, "Run ls"
		if word == "read" {
			callID, kind, title = "r1", sdk.ToolKindRead, "Read notes.txt"
		}
		a.send(ctx, id, sdk.StartToolCall(callID, title, sdk.WithStartKind(kind), sdk.WithStartStatus(sdk.ToolCallStatusInProgress)))
		a.send(ctx, id, sdk.UpdateToolCall(callID, sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted),
			sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("notes.txt"))})))
		a.say(ctx, id, "Ran it.")
	case "codextool":
		// As codex-acp: its only rejection is "abort", on which it ends
		// the turn itself (stopReason cancelled).
		input := map[string]any{"command": "touch codex.txt"}
		a.send(ctx, id, sdk.StartToolCall("c1", "touch codex.txt", sdk.WithStartKind(sdk.ToolKindExecute),
			sdk.WithStartStatus(sdk.ToolCallStatusPending), sdk.WithStartRawInput(input)))
		res, err := a.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: id,
			ToolCall: sdk.ToolCallUpdate{ToolCallId: "c1", Title: sdk.Ptr("touch codex.txt"), Kind: sdk.Ptr(sdk.ToolKindExecute), RawInput: input},
			Options: []sdk.PermissionOption{
				{Kind: sdk.PermissionOptionKindAllowOnce, Name: "Yes, proceed", OptionId: "approved"},
				{Kind: sdk.PermissionOptionKindAllowAlways, Name: "Yes, and don't ask again", OptionId: "approved-execpolicy-amendment"},
				{Kind: sdk.PermissionOptionKindRejectOnce, Name: "No, and tell Codex what to do differently", OptionId: "abort"},
			}})
		outcome := "error"
		if err == nil && res.Outcome.Selected != nil {
			outcome = string(res.Outcome.Selected.OptionId)
		}
		a.log(LogEntry{Method: "permission", Session: string(id), Outcome: outcome})
		if outcome != "approved" {
			a.send(ctx, id, sdk.UpdateToolCall("c1", sdk.WithUpdateStatus(sdk.ToolCallStatusFailed)))
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
		os.WriteFile(filepath.Join(h.Cwd, "codex.txt"), nil, 0o644)
		a.send(ctx, id, sdk.UpdateToolCall("c1", sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted)))
	case "placeholder":
		// As Claude's: the tool_call is titled "Terminal", with no
		// arguments; the update after it names the command.
		a.send(ctx, id, sdk.StartToolCall("p1", "Terminal", sdk.WithStartKind(sdk.ToolKindExecute), sdk.WithStartStatus(sdk.ToolCallStatusPending),
			sdk.WithStartRawInput(map[string]any{})))
		input := map[string]any{"command": "echo hi > hi.txt"}
		a.send(ctx, id, sdk.UpdateToolCall("p1", sdk.WithUpdateTitle("echo hi > hi.txt"), sdk.WithUpdateRawInput(input)))
		if a.ask(ctx, id, "p1", "echo hi > hi.txt", sdk.ToolKindExecute, input) {
			a.send(ctx, id, sdk.UpdateToolCall("p1", sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted)))
		} else {
			a.send(ctx, id, sdk.UpdateToolCall("p1", sdk.WithUpdateStatus(sdk.ToolCallStatusFailed)))
		}
	case "noaskfail":
		// A command run without asking, which fails.
		a.send(ctx, id, sdk.StartToolCall("f1", "Run false", sdk.WithStartKind(sdk.ToolKindExecute), sdk.WithStartStatus(sdk.ToolCallStatusInProgress)))
		a.send(ctx, id, sdk.UpdateToolCall("f1", sdk.WithUpdateStatus(sdk.ToolCallStatusFailed)))
	case "late":
		a.send(ctx, id, sdk.StartToolCall("l1", "bash", sdk.WithStartKind(sdk.ToolKindExecute), sdk.WithStartStatus(sdk.ToolCallStatusPending),
			sdk.WithStartRawInput(map[string]any{})))
		a.say(ctx, id, "Filling it in.")
		input := map[string]any{"command": "touch late.txt"}
		a.send(ctx, id, sdk.UpdateToolCall("l1", sdk.WithUpdateStatus(sdk.ToolCallStatusPending), sdk.WithUpdateRawInput(input)))
		if a.ask(ctx, id, "l1", "bash", sdk.ToolKindExecute, input) {
			if err := os.WriteFile(filepath.Join(h.Cwd, "late.txt"), nil, 0o644); err != nil {
				return sdk.PromptResponse{}, err
			}
			a.send(ctx, id, sdk.UpdateToolCall("l1", sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted)))
		} else {
			a.send(ctx, id, sdk.UpdateToolCall("l1", sdk.WithUpdateStatus(sdk.ToolCallStatusFailed)))
		}
	}
	return end, nil
}

// controlTurn plays the prompts that hold, crash, ask the user or leave a
// child behind, and those that send updates of other kinds.
func (a *agent) controlTurn(t *turn, word string) (sdk.PromptResponse, error) {
	ctx, id, fields, end := t.ctx, t.id, t.fields, t.end
	switch word {
	case "hang":
		a.say(ctx, id, "Thinking...")
		<-ctx.Done()
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	case "hangperm":
		a.send(ctx, id, sdk.StartToolCall("h1", "Create late.txt", sdk.WithStartKind(sdk.ToolKindExecute), sdk.WithStartStatus(sdk.ToolCallStatusPending)))
		answered := make(chan struct{})
		go func() {
			defer close(answered)
			a.ask(context.Background(), id, "h1", "Create late.txt", sdk.ToolKindExecute, nil)
		}()
		select {
		case <-ctx.Done():
			// As copilot: cancelled at once, the request still open.
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		case <-answered:
			return end, nil
		}
	case "crash":
		a.say(ctx, id, "About to crash.")
		fmt.Fprintln(os.Stderr, "fake acp: crashing on purpose")
		time.Sleep(50 * time.Millisecond) // let the chunk reach the client first
		os.Exit(3)
	case "unknown":
		a.raw(id, `{"sessionUpdate":"brand_new_kind","whatever":1}`)
		a.raw(id, `{"sessionUpdate":"another_kind","content":{"type":"text","text":"not for the transcript"}}`)
		a.send(ctx, id, sdk.UpdateAgentThoughtText("pondering"))
		a.send(ctx, id, sdk.UpdatePlan(sdk.PlanEntry{Content: "step one", Priority: sdk.PlanEntryPriorityHigh, Status: sdk.PlanEntryStatusPending}))
		a.send(ctx, id, sdk.SessionUpdate{UsageUpdate: &sdk.SessionUsageUpdate{Used: 900, Size: 64000, SessionUpdate: "usage_update"}})
		a.say(ctx, id, "Still here.")
	case "elicit":
		kind := ""
		if len(fields) > 1 {
			kind = fields[1]
		}
		a.say(ctx, id, "Let me ask.")
		res, err := a.elicit(ctx, id, kind)
		if err != nil {
			a.say(ctx, id, " error: "+err.Error())
		} else {
			a.say(ctx, id, "answer: "+string(res))
		}
		if ctx.Err() != nil {
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
	case "think":
		a.send(ctx, id, sdk.UpdateAgentThoughtText("Reading the "))
		a.send(ctx, id, sdk.UpdateAgentThoughtText("notes first."))
		a.send(ctx, id, sdk.UpdatePlan(
			sdk.PlanEntry{Content: "Read notes.txt", Priority: sdk.PlanEntryPriorityHigh, Status: sdk.PlanEntryStatusInProgress},
			sdk.PlanEntry{Content: "Write the summary", Priority: sdk.PlanEntryPriorityMedium, Status: sdk.PlanEntryStatusPending}))
		a.send(ctx, id, sdk.UpdatePlan(
			sdk.PlanEntry{Content: "Read notes.txt", Priority: sdk.PlanEntryPriorityHigh, Status: sdk.PlanEntryStatusCompleted},
			sdk.PlanEntry{Content: "Write the summary", Priority: sdk.PlanEntryPriorityMedium, Status: sdk.PlanEntryStatusInProgress}))
		a.say(ctx, id, "Here is the summary.")
		a.send(ctx, id, sdk.UpdateAgentThoughtText("Done, I think."))
	case "orphan":
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			return sdk.PromptResponse{}, err
		}
		a.say(ctx, id, fmt.Sprintf("child %d", cmd.Process.Pid))
	}
	return end, nil
}

// replyTurn plays the prompts answered by text alone (any word no other
// scenario knows: "OK."), or by the answer to session/prompt itself.
func (a *agent) replyTurn(t *turn, word string) (sdk.PromptResponse, error) {
	ctx, id, h, text, end := t.ctx, t.id, t.h, t.text, t.end
	switch word {
	case "hello":
		a.say(ctx, id, "Hello", " from", " the fake.")
		h.Lines = append(h.Lines, "agent: Hello from the fake.")
	case "echo":
		reply := fmt.Sprintf("turn %d: %s", h.Turns, text)
		a.say(ctx, id, reply)
		h.Lines = append(h.Lines, "agent: "+reply)
	case "messages":
		for _, c := range []struct{ id, text string }{{"m1", "First "}, {"m1", "message."}, {"m2", "Second message."}} {
			a.send(ctx, id, sdk.SessionUpdate{AgentMessageChunk: &sdk.SessionUpdateAgentMessageChunk{
				Content: sdk.TextBlock(c.text), MessageId: sdk.Ptr(c.id), SessionUpdate: "agent_message_chunk",
			}})
		}
	case "nousage":
		a.say(ctx, id, "No usage.")
		return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
	case "quota":
		// As the Gemini CLI: the turn's tokens in _meta.quota.
		a.say(ctx, id, "Counted.")
		return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn, Meta: map[string]any{"quota": map[string]any{
			"token_count": map[string]any{"input_tokens": 321, "output_tokens": 12},
			"model_usage": []any{map[string]any{"model": "gemini-2.5-flash", "token_count": map[string]any{"input_tokens": 321, "output_tokens": 12}}}}}}, nil
	case "error":
		return sdk.PromptResponse{}, &sdk.RequestError{Code: -32603, Message: "the model exploded"}
	case "refusal":
		a.say(ctx, id, "I would rather not.")
		return sdk.PromptResponse{StopReason: sdk.StopReasonRefusal}, nil
	default:
		a.say(ctx, id, "OK.")

	}
	return end, nil
}

// account returns a turn's usage: the turn's own, or with EnvCumulative the
// session's total so far in this process.
func (a *agent) account(id sdk.SessionId, in, out, cached int) *sdk.Usage {
	turn := sdk.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out, CachedReadTokens: sdk.Ptr(cached)}
	if os.Getenv(EnvCumulative) != "1" {
		return &turn
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.usage[id]
	u.InputTokens += in
	u.OutputTokens += out
	u.TotalTokens += in + out
	c := cached
	if u.CachedReadTokens != nil {
		c += *u.CachedReadTokens
	}
	u.CachedReadTokens = &c
	a.usage[id] = u
	return &u
}

// tool plays one shell tool that asks permission first; it reports whether
// it ran.
func (a *agent) tool(ctx context.Context, id sdk.SessionId, callID sdk.ToolCallId, file, cwd string) bool {
	title := "Create " + file
	input := map[string]any{"command": "touch " + file}
	a.send(ctx, id, sdk.StartToolCall(callID, title, sdk.WithStartKind(sdk.ToolKindExecute),
		sdk.WithStartStatus(sdk.ToolCallStatusPending), sdk.WithStartRawInput(input)))
	if !a.ask(ctx, id, callID, title, sdk.ToolKindExecute, input) {
		a.send(ctx, id, sdk.UpdateToolCall(callID, sdk.WithUpdateStatus(sdk.ToolCallStatusFailed),
			sdk.WithUpdateRawOutput(map[string]any{"message": "The user rejected this tool call.", "code": "rejected"})))
		a.say(ctx, id, "Info: Operation cancelled by user")
		return false
	}
	os.WriteFile(filepath.Join(cwd, file), []byte("created\n"), 0o644)
	a.send(ctx, id, sdk.UpdateToolCall(callID, sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted),
		sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("created " + file))})))
	return true
}

// ask sends session/request_permission with the options of EnvOptions and
// reports whether the answer was an allow option.
func (a *agent) ask(ctx context.Context, id sdk.SessionId, callID sdk.ToolCallId, title string, kind sdk.ToolKind, input any) bool {
	kinds := "allow_once,allow_always,reject_once"
	if v, ok := os.LookupEnv(EnvOptions); ok {
		kinds = v
	}
	var opts []sdk.PermissionOption
	for _, k := range strings.Split(kinds, ",") {
		if k = strings.TrimSpace(k); k != "" {
			// Ids differ from kinds, as with opencode ("once", "always",
			// "reject"): a client must pick by kind.
			opts = append(opts, sdk.PermissionOption{Kind: sdk.PermissionOptionKind(k), Name: k, OptionId: sdk.PermissionOptionId("opt-" + k)})
		}
	}
	res, err := a.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: id,
		ToolCall: sdk.ToolCallUpdate{ToolCallId: callID, Title: sdk.Ptr(title), Kind: sdk.Ptr(kind),
			Status: sdk.Ptr(sdk.ToolCallStatusPending), RawInput: input},
		Options: opts,
	})
	outcome := "error"
	switch {
	case err != nil:
		outcome = "error: " + err.Error()
	case res.Outcome.Cancelled != nil:
		outcome = "cancelled"
	case res.Outcome.Selected != nil:
		outcome = string(res.Outcome.Selected.OptionId)
	}
	a.log(LogEntry{Method: "permission", Session: string(id), Outcome: outcome})
	return strings.HasPrefix(outcome, "opt-allow")
}
