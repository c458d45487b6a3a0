// Package fakecli is a stand-in for the Copilot CLI in tests: a process that
// speaks the CLI's framed JSON-RPC on stdio and plays a scenario chosen by
// the prompt's first word. The test binary re-executes itself with
// EnvEnable=1 and calls Main.
//
// Prompts: "tools" (two shell tools asking permission), "ask" (a
// userInput.request mid-stream), "hang" (streams until aborted), "error"
// (session.error), "crash" (exits mid-turn), "orphan" (starts a child in
// its process group, then exits), "garbage" (malformed frames
// around a normal turn), "fatal" (an unreadable frame, then it ignores EOF
// and SIGTERM), "unexpected" (server requests that were never enabled),
// "flood N" (N deltas "0 ", "1 ", … as fast as the pipe takes them);
// anything else streams "turn N: echo PROMPT", where N counts the session's
// turns across restarts (the session store survives the process).
package fakecli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/session/copilot/jsonrpc"
)

// Environment of the fake.
const (
	EnvEnable    = "PILOTDESK_FAKE_COPILOT"  // "1": act as the fake CLI
	EnvProtocol  = "FAKE_COPILOT_PROTOCOL"   // protocol version to report (default 3)
	EnvNoConnect = "FAKE_COPILOT_NO_CONNECT" // "1": answer connect with "Unhandled method"
	EnvSignedOut = "FAKE_COPILOT_SIGNED_OUT" // "1": auth.getStatus says not authenticated
	EnvLog       = "FAKE_COPILOT_LOG"        // file: one JSON line per request received
	EnvState     = "FAKE_COPILOT_STATE"      // dir: the session store (required for resume)
	EnvExitEarly = "FAKE_COPILOT_EXIT_EARLY" // "1": print to stderr and exit 7 before reading
	EnvBigFrame  = "FAKE_COPILOT_BIG_FRAME"  // bytes of the oversized frame in "garbage" (default 2 MiB)
)

// LogEntry is one line of the EnvLog file.
type LogEntry struct {
	PID    int             `json:"pid"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// Main runs the fake until stdin closes and returns the exit code.
func Main() int {
	if os.Getenv(EnvExitEarly) == "1" {
		fmt.Fprintln(os.Stderr, "fake copilot: cannot start (on purpose)")
		return 7
	}
	protocol := 3
	if v := os.Getenv(EnvProtocol); v != "" {
		protocol, _ = strconv.Atoi(v)
	}
	f := &fake{
		out:      &lockedWriter{f: os.Stdout},
		protocol: protocol,
		state:    os.Getenv(EnvState),
		logPath:  os.Getenv(EnvLog),
		sessions: make(map[string]*fsession),
		ready:    make(chan struct{}),
	}
	f.log("argv", os.Args[1:])
	f.conn = jsonrpc.NewConn(os.Stdin, f.out, f, jsonrpc.Options{})
	close(f.ready)
	<-f.conn.Done()
	f.mu.Lock()
	stubborn := f.stubborn
	f.mu.Unlock()
	if stubborn {
		select {} // only SIGKILL ends this one
	}
	return 0
}

type lockedWriter struct {
	mu sync.Mutex
	f  *os.File
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Write(b)
}

type fake struct {
	out      *lockedWriter
	conn     *jsonrpc.Conn
	protocol int
	state    string
	logPath  string
	logMu    sync.Mutex
	ready    chan struct{} // closed once conn is set: the reader starts before

	mu       sync.Mutex
	sessions map[string]*fsession
	stubborn bool
}

type fsession struct {
	id      string
	model   string
	turns   int
	premium int
	pending map[string]chan json.RawMessage // permission requestId → decision
	abort   chan struct{}
}

func (f *fake) log(method string, params any) {
	if f.logPath == "" {
		return
	}
	raw, _ := json.Marshal(params)
	line, _ := json.Marshal(LogEntry{PID: os.Getpid(), Method: method, Params: raw})
	f.logMu.Lock()
	defer f.logMu.Unlock()
	file, err := os.OpenFile(f.logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer file.Close()
	file.Write(append(line, '\n'))
}

func (f *fake) Notification(method string, params json.RawMessage) {
	f.log(method, params)
}

type sessionParams struct {
	SessionID string `json:"sessionId"`
	Model     string `json:"model"`
	Prompt    string `json:"prompt"`
	ModelID   string `json:"modelId"`
	RequestID string `json:"requestId"`
	Result    json.RawMessage
}

func rpcErr(code int, format string, args ...any) error {
	return &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (f *fake) Request(ctx context.Context, method string, params json.RawMessage, reply jsonrpc.Replier) {
	<-f.ready
	f.log(method, params)
	var p sessionParams
	_ = json.Unmarshal(params, &p)
	switch method {
	case "connect":
		if os.Getenv(EnvNoConnect) == "1" {
			reply(nil, rpcErr(jsonrpc.CodeMethodNotFound, "Unhandled method connect"))
			return
		}
		reply(map[string]any{"ok": true, "protocolVersion": f.protocol, "version": "0.0.0-fake"}, nil)
	case "ping":
		reply(map[string]any{"message": "pong", "protocolVersion": f.protocol}, nil)
	case "auth.getStatus":
		if os.Getenv(EnvSignedOut) == "1" {
			reply(map[string]any{"isAuthenticated": false, "statusMessage": "Not authenticated"}, nil)
			return
		}
		reply(map[string]any{"isAuthenticated": true, "authType": "user", "login": "octocat"}, nil)
	case "session.create", "session.resume":
		s := &fsession{id: p.SessionID, model: p.Model, pending: make(map[string]chan json.RawMessage)}
		if s.id == "" {
			s.id = uuid.NewString()
		}
		if s.model == "" {
			s.model = "fake-model"
		}
		if method == "session.resume" {
			turns, ok := f.load(s.id)
			if !ok {
				reply(nil, rpcErr(jsonrpc.CodeInternalError, "Request session.resume failed with message: Failed to load session events: Session not found: %s", s.id))
				return
			}
			s.turns = turns
		}
		f.mu.Lock()
		f.sessions[s.id] = s
		f.mu.Unlock()
		f.emit(s.id, "session.start", map[string]any{"sessionId": s.id, "selectedModel": s.model}, false)
		reply(map[string]any{"sessionId": s.id, "mode": "interactive", "modelState": map[string]any{"modelId": s.model}}, nil)
	case "session.send":
		s := f.session(p.SessionID)
		if s == nil {
			reply(nil, rpcErr(jsonrpc.CodeInternalError, "Request session.send failed with message: Session not found for sessionId: %s", p.SessionID))
			return
		}
		f.mu.Lock()
		s.turns++
		turns := s.turns
		s.abort = make(chan struct{})
		abort := s.abort
		f.mu.Unlock()
		f.save(s.id, turns)
		reply(map[string]any{"messageId": uuid.NewString()}, nil)
		go f.turn(s, p.Prompt, turns, abort)
	case "session.abort":
		if s := f.session(p.SessionID); s != nil {
			f.mu.Lock()
			if s.abort != nil {
				close(s.abort)
				s.abort = nil
			}
			f.mu.Unlock()
		}
		reply(map[string]any{"success": true}, nil)
	case "session.detach":
		s := f.session(p.SessionID)
		if s == nil {
			reply(map[string]any{"success": false}, nil)
			return
		}
		f.mu.Lock()
		delete(f.sessions, s.id)
		premium, model := s.premium, s.model
		f.mu.Unlock()
		f.emit(s.id, "session.shutdown", map[string]any{
			"shutdownType":         "routine",
			"totalPremiumRequests": premium,
			"modelMetrics": map[string]any{model: map[string]any{
				"requests": map[string]any{"count": premium, "cost": premium},
				"usage":    map[string]any{"inputTokens": 100 * premium, "outputTokens": 7 * premium},
			}},
		}, false)
		reply(map[string]any{"success": true}, nil)
	case "session.model.switchTo":
		s := f.session(p.SessionID)
		if s == nil {
			reply(nil, rpcErr(jsonrpc.CodeInternalError, "Session not found for sessionId: %s", p.SessionID))
			return
		}
		f.mu.Lock()
		previous := s.model
		s.model = p.ModelID
		f.mu.Unlock()
		f.emit(s.id, "session.model_change", map[string]any{"previousModel": previous, "newModel": p.ModelID}, false)
		reply(map[string]any{"status": "applied", "modelId": p.ModelID}, nil)
	case "session.permissions.handlePendingPermissionRequest":
		s := f.session(p.SessionID)
		var ch chan json.RawMessage
		if s != nil {
			f.mu.Lock()
			ch = s.pending[p.RequestID]
			delete(s.pending, p.RequestID)
			f.mu.Unlock()
		}
		if ch == nil {
			reply(map[string]any{"success": false}, nil)
			return
		}
		var full struct {
			Result json.RawMessage `json:"result"`
		}
		_ = json.Unmarshal(params, &full)
		ch <- full.Result
		reply(map[string]any{"success": true}, nil)
	default:
		reply(nil, rpcErr(jsonrpc.CodeMethodNotFound, "Unhandled method %s", method))
	}
}

func (f *fake) session(id string) *fsession {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions[id]
}

func (f *fake) load(id string) (int, bool) {
	if f.state == "" {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(f.state, id))
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return n, err == nil
}

func (f *fake) save(id string, turns int) {
	if f.state != "" {
		_ = os.WriteFile(filepath.Join(f.state, id), []byte(strconv.Itoa(turns)), 0o644)
	}
}

func (f *fake) emit(sessionID, typ string, data any, ephemeral bool) {
	ev := map[string]any{
		"id":        uuid.NewString(),
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"type":      typ,
		"data":      data,
	}
	if ephemeral {
		ev["ephemeral"] = true
	}
	_ = f.conn.Notify("session.event", map[string]any{"sessionId": sessionID, "event": ev})
}

func frame(body string) string {
	return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
}

// raw writes bytes straight to stdout, for malformed frames.
func (f *fake) raw(s string) {
	f.out.Write([]byte(s))
}

func (f *fake) turn(s *fsession, prompt string, n int, abort chan struct{}) {
	word, _, _ := strings.Cut(strings.TrimSpace(prompt), " ")
	t := &fturn{f: f, s: s, prompt: prompt, n: n, abort: abort, msgID: uuid.NewString()}
	f.emit(s.id, "user.message", map[string]any{"content": prompt}, false)
	f.emit(s.id, "assistant.turn_start", map[string]any{"turnId": strconv.Itoa(n)}, false)
	switch word {
	case "crash", "orphan", "fatal":
		t.die(word)
	case "garbage", "unexpected":
		t.wire(word)
	case "tools", "ask":
		t.tools(word)
	default:
		t.reply(word)
	}
}

// fturn is a turn being played: its session, prompt and number, the abort
// of the session, and the assistant message it streams.
type fturn struct {
	f      *fake
	s      *fsession
	prompt string
	n      int
	abort  chan struct{}
	msgID  string

	content strings.Builder // what say streamed
}

func (t *fturn) delta(text string) {
	t.f.emit(t.s.id, "assistant.message_delta", map[string]any{"messageId": t.msgID, "deltaContent": text}, true)
}

// say streams text as part of the turn's message.
func (t *fturn) say(text string) {
	t.content.WriteString(text)
	t.delta(text)
}

func (t *fturn) idle(aborted bool) {
	t.f.emit(t.s.id, "assistant.idle", map[string]any{"aborted": aborted}, true)
	t.f.emit(t.s.id, "session.idle", map[string]any{"aborted": aborted, "mode": "interactive"}, true)
}

// finish ends the turn: its message whole, its usage, idle.
func (t *fturn) finish() {
	f, s := t.f, t.s
	f.emit(s.id, "assistant.message", map[string]any{"messageId": t.msgID, "content": t.content.String(), "toolRequests": []any{}}, false)
	f.mu.Lock()
	s.premium++
	model := s.model
	f.mu.Unlock()
	f.emit(s.id, "assistant.usage", map[string]any{
		"model": model, "cost": 1, "inputTokens": 100, "outputTokens": 7, "cacheReadTokens": 10, "cacheWriteTokens": 0,
		"quotaSnapshots":  map[string]any{"premium_interactions": map[string]any{"entitlementRequests": 300, "usedRequests": t.n, "remainingPercentage": 90}},
		"someFutureField": map[string]any{"x": 1},
	}, true)
	t.idle(false)
}

// die plays the prompts on which the CLI dies or stops answering.
func (t *fturn) die(word string) {
	f := t.f
	say, finish := t.say, t.finish
	switch word {
	case "crash":
		say("partial ")
		time.Sleep(50 * time.Millisecond) // let the delta leave before dying
		fmt.Fprintln(os.Stderr, "fake copilot: crashing on purpose")
		os.Exit(3)

	case "orphan":
		// Leave a child in the process group, then die: the backend must
		// not let it outlive the CLI (as the npm loader's native binary
		// would, SIGTERM not being forwarded).
		child := exec.Command("sleep", "300")
		if err := child.Start(); err != nil {
			say("could not start a child: " + err.Error())
			finish()
			return
		}
		f.log("child", child.Process.Pid)
		time.Sleep(50 * time.Millisecond)
		os.Exit(4)

	case "fatal":
		f.mu.Lock()
		f.stubborn = true
		f.mu.Unlock()
		signal.Ignore(syscall.SIGTERM)
		say("before the bad frame ")
		time.Sleep(50 * time.Millisecond)
		f.raw("Content-Length: nope\r\n\r\n{}")
		select {} // never answers, never exits by itself
	}
}

// wire plays the prompts that send what the backend must pass over:
// malformed frames, unknown messages and events, requests never enabled.
func (t *fturn) wire(word string) {
	f, s, msgID := t.f, t.s, t.msgID
	say, finish := t.say, t.finish
	switch word {
	case "garbage":
		say("before ")
		f.raw("Content-Length: 9\r\n\r\n{not json")                // bad JSON
		f.raw("Content-Length: 2\r\n\r\n[]")                       // JSON, not a message
		f.raw("Content-Length: 0\r\n\r\n")                         // empty
		f.raw("npm warn a stray log line on stdout\r\n")           // not a header
		f.raw("X-Junk: yes\r\nContent-Type: application/json\r\n") // unknown headers (frame follows)
		_ = f.conn.Notify("some.unknown.notification", map[string]any{"x": 1})
		f.emit(s.id, "model.messages_snapshot", map[string]any{"whatever": true}, true) // unknown event type
		_ = f.conn.Notify("session.event", map[string]any{"sessionId": s.id, "event": "not an object"})
		f.raw(frame(`{"jsonrpc":"2.0","id":987654,"result":{}}`)) // a response nobody waits for
		f.raw(frame(`{"jsonrpc":"2.0","id":"str","result":{}}`))  // an id we never use
		big := 2 << 20
		if v, err := strconv.Atoi(os.Getenv(EnvBigFrame)); err == nil {
			big = v
		}
		body := `{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":"` + s.id + `","event":{"type":"assistant.message_delta","data":{"messageId":"` + msgID + `","deltaContent":"OVERSIZED` + strings.Repeat("x", big) + `"}}}}`
		f.raw(frame(body))
		say("after")
		finish()

	case "unexpected":
		var codes []string
		for _, m := range []string{"exitPlanMode.request", "hooks.invoke"} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := f.conn.Call(ctx, m, map[string]any{"sessionId": s.id}, nil)
			cancel()
			if e, ok := err.(*jsonrpc.Error); ok {
				codes = append(codes, fmt.Sprintf("%s=%d", m, e.Code))
			} else {
				codes = append(codes, fmt.Sprintf("%s=%v", m, err))
			}
		}
		say(strings.Join(codes, " "))
		finish()
	}
}

// tools plays the prompts whose turn runs tools: commands asking
// permission, and ask_user.
func (t *fturn) tools(word string) {
	f, s, abort := t.f, t.s, t.abort
	say, finish := t.say, t.finish
	switch word {
	case "tools":
		var outcomes []string
		for i, cmd := range []string{"touch one.txt", "touch two.txt"} {
			callID := fmt.Sprintf("call_%d", i+1)
			f.emit(s.id, "tool.execution_start", map[string]any{"toolCallId": callID, "toolName": "bash", "arguments": map[string]any{"command": cmd}}, false)
			decision := f.askPermission(s, callID, cmd, abort)
			var d struct {
				Kind     string `json:"kind"`
				Feedback string `json:"feedback"`
			}
			_ = json.Unmarshal(decision, &d)
			switch d.Kind {
			case "approve-once":
				f.emit(s.id, "tool.execution_complete", map[string]any{"toolCallId": callID, "success": true, "result": map[string]any{"content": "ran: " + cmd}}, false)
				outcomes = append(outcomes, callID+"=approved")
			default:
				f.emit(s.id, "tool.execution_complete", map[string]any{"toolCallId": callID, "success": false, "error": map[string]any{"code": "denied", "message": "The user rejected this tool call. User feedback: " + d.Feedback}}, false)
				outcomes = append(outcomes, callID+"=rejected("+d.Feedback+")")
			}
			say(fmt.Sprintf("step %d done. ", i+1))
		}
		say(strings.Join(outcomes, " "))
		finish()

	case "ask":
		say("Let me ask. ")
		f.emit(s.id, "tool.execution_start", map[string]any{"toolCallId": "call_ask", "toolName": "ask_user", "arguments": map[string]any{"question": "Which color?", "choices": []string{"red", "blue"}}}, false)
		var ans struct {
			Answer      string `json:"answer"`
			WasFreeform bool   `json:"wasFreeform"`
		}
		err := f.conn.Call(context.Background(), "userInput.request", map[string]any{"sessionId": s.id, "question": "Which color?", "choices": []string{"red", "blue"}, "allowFreeform": true}, &ans)
		if err != nil {
			f.emit(s.id, "tool.execution_complete", map[string]any{"toolCallId": "call_ask", "success": true, "result": map[string]any{"content": "The user was unable to respond due to an error"}}, false)
			say("no answer: " + err.Error())
		} else {
			f.emit(s.id, "tool.execution_complete", map[string]any{"toolCallId": "call_ask", "success": true, "result": map[string]any{"content": "User selected: " + ans.Answer}}, false)
			say(fmt.Sprintf("you said %s (freeform=%v)", ans.Answer, ans.WasFreeform))
		}
		select {
		case <-abort:
			f.abortTail(s)
			return
		default:
		}
		finish()
	}
}

// reply plays the other prompts: text (an echo by default), a flood of
// deltas, a turn that hangs until aborted, a failed turn.
func (t *fturn) reply(word string) {
	f, s, prompt, n, abort := t.f, t.s, t.prompt, t.n, t.abort
	say, finish, idle := t.say, t.finish, t.idle
	switch word {
	case "flood":
		_, arg, _ := strings.Cut(strings.TrimSpace(prompt), " ")
		n, _ := strconv.Atoi(arg)
		for i := range n {
			say(strconv.Itoa(i) + " ")
		}
		finish()

	case "hang":
		say("working")
		select {
		case <-abort:
			f.abortTail(s)
		case <-time.After(time.Minute):
			finish()
		}

	case "error":
		f.emit(s.id, "session.error", map[string]any{"errorType": "query", "message": "Execution failed: boom"}, false)
		idle(false)

	default:
		say(fmt.Sprintf("turn %d: ", n))
		say("echo ")
		say(prompt)
		finish()
	}
}

// askPermission emits permission.requested and waits for the client's
// handlePendingPermissionRequest.
func (f *fake) askPermission(s *fsession, callID, cmd string, abort chan struct{}) json.RawMessage {
	reqID := uuid.NewString()
	ch := make(chan json.RawMessage, 1)
	f.mu.Lock()
	s.pending[reqID] = ch
	f.mu.Unlock()
	f.emit(s.id, "permission.requested", map[string]any{
		"requestId": reqID,
		"permissionRequest": map[string]any{
			"kind": "shell", "toolCallId": callID, "fullCommandText": cmd, "intention": "run " + cmd,
		},
	}, true)
	select {
	case d := <-ch:
		f.emit(s.id, "permission.completed", map[string]any{"requestId": reqID, "toolCallId": callID}, true)
		return d
	case <-abort:
		return json.RawMessage(`{"kind":"reject","feedback":"aborted"}`)
	}
}

func (f *fake) abortTail(s *fsession) {
	f.emit(s.id, "abort", map[string]any{"reason": "user_initiated"}, false)
	f.emit(s.id, "assistant.idle", map[string]any{"aborted": true}, true)
	f.emit(s.id, "session.idle", map[string]any{"aborted": true, "mode": "interactive"}, true)
}
