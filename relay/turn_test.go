package relay_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
)

// Session events become protocol events with the exact shapes of
// docs/protocol.md, Server to client.
func TestEventMapping(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("ev")
	ft := e.startTurn(cl, "ev", "map it", nil)
	cost, read, write := 1.5, int64(300), int64(0)
	ft.Host.Emit(session.Delta{MessageID: "m1", Content: "Hi"})
	ft.Host.Emit(session.Message{MessageID: "m1", Content: "Hi"})
	ft.Host.Emit(session.ToolStart{ToolCallID: "t1", ToolName: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)})
	ft.Host.Emit(session.ToolEnd{ToolCallID: "t1", Success: true, Result: "a b"})
	ft.Host.Emit(session.ToolStart{ToolCallID: "t2", ToolName: "view"})
	ft.Host.Emit(session.ToolEnd{ToolCallID: "t2", Denied: true})
	ft.Host.Emit(session.Usage{Model: "gpt-5", Cost: &cost, CacheReadTokens: &read, CacheWriteTokens: &write,
		QuotaSnapshots: json.RawMessage(`{"premium":{"used":1}}`)})
	ft.Host.Emit(session.Usage{}) // nil snapshots are {}
	ft.Host.Emit(session.Shutdown{TotalPremiumRequests: 2, ModelMetrics: json.RawMessage(`{"gpt-5":{}}`)})
	ft.Host.Emit(session.Shutdown{})
	ft.Host.Emit(session.ToolStart{ToolCallID: "t3", ToolName: "x", Arguments: json.RawMessage(`{bad`)}) // kept, as text
	ft.finish(nil)

	type check struct {
		typ  string
		keys []string
		vals map[string]any
	}
	checks := []check{
		{"copilot:delta", []string{"conversationId", "seq", "messageId", "content"}, map[string]any{"messageId": "m1", "content": "Hi"}},
		{"copilot:message", []string{"conversationId", "seq", "messageId", "content"}, map[string]any{"content": "Hi"}},
		{"copilot:tool_start", []string{"conversationId", "seq", "toolCallId", "toolName", "arguments"}, map[string]any{"toolName": "bash"}},
		{"copilot:tool_end", []string{"conversationId", "seq", "toolCallId", "success", "denied", "result"}, map[string]any{"success": true, "denied": false, "result": "a b"}},
		{"copilot:tool_start", []string{"conversationId", "seq", "toolCallId", "toolName"}, map[string]any{"toolName": "view"}},
		{"copilot:tool_end", []string{"conversationId", "seq", "toolCallId", "success", "denied"}, map[string]any{"success": false, "denied": true}},
		{"copilot:quota", []string{"conversationId", "seq", "quotaSnapshots", "model", "cost", "cacheReadTokens", "cacheWriteTokens"}, map[string]any{"model": "gpt-5", "cost": 1.5, "cacheReadTokens": 300.0, "cacheWriteTokens": 0.0}},
		{"copilot:quota", []string{"conversationId", "seq", "quotaSnapshots"}, nil},
		{"copilot:shutdown", []string{"conversationId", "seq", "totalPremiumRequests", "modelMetrics"}, map[string]any{"totalPremiumRequests": 2.0}},
		{"copilot:shutdown", []string{"conversationId", "seq", "totalPremiumRequests", "modelMetrics"}, map[string]any{"totalPremiumRequests": 0.0}},
		{"copilot:tool_start", []string{"conversationId", "seq", "toolCallId", "toolName", "arguments"}, map[string]any{"arguments": "{bad"}},
		{"copilot:idle", []string{"conversationId", "seq", "status"}, map[string]any{"status": "completed"}},
	}
	for i, c := range checks {
		f := cl.Expect(c.typ)
		m := keys(t, f, c.keys...)
		if f.Seq() != int64(i+2) {
			t.Errorf("%s: seq %d, want %d", f.Raw, f.Seq(), i+2)
		}
		for k, v := range c.vals {
			if m[k] != v {
				t.Errorf("%s: %s = %v, want %v", f.Raw, k, m[k], v)
			}
		}
		switch c.typ {
		case "copilot:quota":
			if _, ok := m["quotaSnapshots"].(map[string]any); !ok {
				t.Errorf("%s: quotaSnapshots is not an object", f.Raw)
			}
		case "copilot:shutdown":
			if _, ok := m["modelMetrics"].(map[string]any); !ok {
				t.Errorf("%s: modelMetrics is not an object", f.Raw)
			}
		}
	}
}

// The token counts a backend reports reach the client on copilot:quota: a
// count of 0 is sent, an unknown one is left out.
func TestUsageTokens(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("tok")
	ft := e.startTurn(cl, "tok", "count", nil)
	in, out, zero := int64(1200), int64(80), int64(0)
	ft.Host.Emit(session.Usage{Model: "gpt-5", InputTokens: &in, OutputTokens: &out})
	ft.Host.Emit(session.Usage{Model: "gpt-5", InputTokens: &zero})
	ft.finish(nil)

	f := cl.Expect("copilot:quota")
	m := keys(t, f, "conversationId", "seq", "quotaSnapshots", "model", "inputTokens", "outputTokens")
	if m["inputTokens"] != 1200.0 || m["outputTokens"] != 80.0 {
		t.Fatalf("quota %s: want inputTokens 1200, outputTokens 80", f.Raw)
	}
	var q protocol.Quota
	f.Decode(t, &q)
	if q.InputTokens == nil || *q.InputTokens != 1200 || q.OutputTokens == nil || *q.OutputTokens != 80 {
		t.Fatalf("decoded quota %+v", q)
	}
	f = cl.Expect("copilot:quota")
	if m := keys(t, f, "conversationId", "seq", "quotaSnapshots", "model", "inputTokens"); m["inputTokens"] != 0.0 {
		t.Fatalf("quota %s: want inputTokens 0 and no outputTokens", f.Raw)
	}
	cl.Expect("copilot:idle")
}

// A backend's word that its agent reports no usage reaches the client as a
// copilot:quota with unreported and no figures (docs/protocol.md, Usage).
func TestUsageUnreported(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("none")
	ft := e.startTurn(cl, "none", "count", nil)
	ft.Host.Emit(session.Usage{Unreported: true})
	ft.finish(nil)
	f := cl.Expect("copilot:quota")
	if m := keys(t, f, "conversationId", "seq", "quotaSnapshots", "unreported"); m["unreported"] != true {
		t.Fatalf("quota %s: want unreported true and no figures", f.Raw)
	}
	cl.Expect("copilot:idle")
}

// Backends pass events by value; a pointer is not an event the relay knows:
// it is logged and dropped, and takes no seq.
func TestPointerEventIsDropped(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("ptr")
	ft := e.startTurn(cl, "ptr", "go", nil) // user_message is seq 1
	ft.Host.Emit(&session.Delta{MessageID: "m", Content: "lost"})
	ft.Host.Emit(session.Delta{MessageID: "m", Content: "kept"})
	ft.finish(nil)
	if d := cl.Expect("copilot:delta"); d.Field("content") != "kept" || d.Seq() != 2 {
		t.Fatalf("delta %s: want the value event, seq 2", d.Raw)
	}
	cl.Expect("copilot:idle")
	e.logs.waitLog(t, "unknown session event dropped")
}

// Before the agent runs a turn the relay emits copilot:user_message; the
// turn gets the prompt and the model; the session is opened once, lazily.
func TestSendStartsTurn(t *testing.T) {
	e := start(t, nil)
	cl := e.dial()
	if len(e.agent.openCalls()) != 0 {
		t.Fatal("a session was opened before the first send")
	}
	cl.Send("copilot:send", map[string]any{"conversationId": "t1", "prompt": "  \nFirst line of the prompt\nsecond line", "model": "gpt-5"})
	cl.Expect("copilot:subscribed")
	um := cl.Expect("copilot:user_message")
	m := keys(t, um, "conversationId", "seq", "messageId", "content", "mode", "sentBy", "agent")
	if m["content"] != "  \nFirst line of the prompt\nsecond line" || m["mode"] != "act" || m["messageId"] == "" || m["agent"] != "fake" {
		t.Fatalf("user_message %s", um.Raw)
	}
	ft := e.agent.nextTurn(t)
	if ft.Turn.Prompt != "  \nFirst line of the prompt\nsecond line" || ft.Turn.Model != "gpt-5" {
		t.Fatalf("turn %+v", ft.Turn)
	}
	ft.finish(nil)
	cl.Expect("copilot:idle")

	cl.Send("copilot:send", map[string]any{"conversationId": "t1", "prompt": "again"})
	um2 := cl.Expect("copilot:user_message")
	if um2.Field("messageId") == um.Field("messageId") {
		t.Fatal("two user messages share a messageId")
	}
	ft = e.agent.nextTurn(t)
	if ft.Turn.Model != "" {
		t.Fatalf("second turn model %q, want the session's (empty)", ft.Turn.Model)
	}
	ft.finish(nil)
	cl.Expect("copilot:idle")
	opens := e.agent.openCalls()
	if len(opens) != 1 || opens[0].ConversationID != "t1" || opens[0].Opts.Model != "gpt-5" || opens[0].Opts.Resume {
		t.Fatalf("opens %+v, want one for t1 with model gpt-5, not resumed", opens)
	}

	cl.Send("copilot:list", nil)
	list := cl.Expect("copilot:conversations")
	var conv protocol.Conversations
	list.Decode(t, &conv)
	if len(conv.Conversations) != 1 || conv.Conversations[0].Title != "First line of the prompt" {
		t.Fatalf("list %s", list.Raw)
	}

	long := strings.Repeat("word ", 40)
	cl.Send("copilot:send", map[string]any{"conversationId": "t2", "prompt": long})
	cl.WaitFor("copilot:user_message", nil)
	e.agent.nextTurn(t).finish(nil)
	cl.WaitFor("copilot:idle", nil)
	cl.Send("copilot:list", nil)
	cl.Expect("copilot:conversations").Decode(t, &conv)
	if title := conv.Conversations[0].Title; len([]rune(title)) > 60 || !strings.HasPrefix(title, "word word") || !strings.HasSuffix(title, "…") {
		t.Fatalf("title of a long prompt: %q", title)
	}
}

func TestSendWhileStreamingIsBusy(t *testing.T) {
	e := start(t, nil)
	a, _ := e.subscribe("busy")
	b, _ := e.subscribe("busy")
	ft := e.startTurn(a, "busy", "one", nil)
	b.Send("copilot:send", map[string]any{"conversationId": "busy", "prompt": "two"})
	f := b.WaitFor("error", nil)
	if m := keys(t, f, "code", "message", "type", "conversationId"); m["code"] != protocol.CodeConversationBusy || m["conversationId"] != "busy" || m["type"] != "copilot:send" {
		t.Fatalf("busy error %s", f.Raw)
	}
	// Another conversation is not busy.
	b.Send("copilot:send", map[string]any{"conversationId": "other", "prompt": "three"})
	b.WaitFor("copilot:user_message", func(f relaytest.Frame) bool { return f.Field("conversationId") == "other" })
	other := e.agent.nextTurn(t)
	other.finish(nil)
	ft.finish(nil)
	a.WaitFor("copilot:idle", nil)
	// Once idle, a send is accepted.
	b.Send("copilot:send", map[string]any{"conversationId": "busy", "prompt": "four"})
	b.WaitFor("copilot:user_message", func(f relaytest.Frame) bool { return f.Field("content") == "four" })
	e.agent.nextTurn(t).finish(nil)
}

func TestTurnStatuses(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("st")

	// completed
	ft := e.startTurn(cl, "st", "ok", nil)
	ft.finish(nil)
	if s := cl.Expect("copilot:idle").Field("status"); s != "completed" {
		t.Fatalf("status %v", s)
	}

	// error: copilot:error first, then idle error
	ft = e.startTurn(cl, "st", "fail", nil)
	ft.finish(errBoom)
	ef := cl.Expect("copilot:error")
	if m := keys(t, ef, "conversationId", "seq", "message"); !strings.Contains(m["message"].(string), "boom") {
		t.Fatalf("copilot:error %s", ef.Raw)
	}
	if s := cl.Expect("copilot:idle").Field("status"); s != "error" {
		t.Fatalf("status %v", s)
	}

	// aborted, with the partial text kept as a message
	ft = e.startTurn(cl, "st", "stop me", nil)
	ft.delta("m-partial", "half ")
	ft.delta("m-partial", "done")
	ft.delta("m-whole", "w")
	ft.Host.Emit(session.Message{MessageID: "m-whole", Content: "w"})
	cl.Send("copilot:abort", map[string]any{"conversationId": "st"})
	if err := ft.waitRan(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v after abort", err)
	}
	idle, frames := cl.WaitForCollect("copilot:idle", nil)
	if idle.Field("status") != "aborted" {
		t.Fatalf("status %s", idle.Raw)
	}
	last := frames[len(frames)-1]
	if last.Type != "copilot:message" || last.Field("messageId") != "m-partial" || last.Field("content") != "half done" {
		t.Fatalf("before idle: %s", framesString(frames))
	}
	for _, f := range frames[:len(frames)-1] {
		if f.Type == "copilot:message" && f.Field("messageId") == "m-partial" {
			t.Fatalf("partial message sent twice: %s", framesString(frames))
		}
	}

	// an agent that fails to open: copilot:error, idle error
	e.agent.mu.Lock()
	e.agent.openErr = errors.New("no CLI")
	e.agent.mu.Unlock()
	cl.Send("copilot:send", map[string]any{"conversationId": "st-new", "prompt": "x"})
	cl.WaitFor("copilot:user_message", nil)
	ef = cl.Expect("copilot:error")
	if !strings.Contains(ef.Field("message").(string), "no CLI") {
		t.Fatalf("open failure %s", ef.Raw)
	}
	if s := cl.Expect("copilot:idle").Field("status"); s != "error" {
		t.Fatalf("status %v", s)
	}
}

func TestAbort(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("ab")
	cl.Send("copilot:abort", map[string]any{"conversationId": "ab"})
	f := cl.Expect("error")
	if m := dataMap(t, f); m["code"] != protocol.CodeNotStreaming || m["conversationId"] != "ab" {
		t.Fatalf("abort while idle: %s", f.Raw)
	}
	cl.Send("copilot:abort", map[string]any{"conversationId": "unknown"})
	if m := dataMap(t, cl.Expect("error")); m["code"] != protocol.CodeNotStreaming {
		t.Fatalf("abort of unknown: %v", m)
	}

	// Abort names its conversation: another stream goes on.
	other, _ := e.subscribe("ab-other")
	ftOther := e.startTurn(other, "ab-other", "keep going", nil)
	ft := e.startTurn(cl, "ab", "stop", nil)
	cl.Send("copilot:abort", map[string]any{"conversationId": "ab"})
	ft.waitRan(t)
	if s := cl.WaitFor("copilot:idle", nil).Field("status"); s != "aborted" {
		t.Fatalf("status %v", s)
	}
	if ftOther.Ctx.Err() != nil {
		t.Fatal("aborting one conversation aborted another")
	}
	ftOther.finish(nil)
	if s := other.WaitFor("copilot:idle", nil).Field("status"); s != "completed" {
		t.Fatalf("status %v", s)
	}
}

func TestAbortWithoutConversationID(t *testing.T) {
	e := start(t, nil)
	a, _ := e.subscribe("first")
	b, _ := e.subscribe("second")
	ftA := e.startTurn(a, "first", "one", nil)
	ftB := e.startTurn(b, "second", "two", nil)
	a.SendRaw([]byte(`{"type":"copilot:abort","data":{}}`))
	if err := ftB.waitRan(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run of the last stream returned %v", err)
	}
	if s := b.WaitFor("copilot:idle", nil).Field("status"); s != "aborted" {
		t.Fatalf("status %v", s)
	}
	if ftA.Ctx.Err() != nil {
		t.Fatal("the deprecated abort aborted an older stream")
	}
	line := e.logs.waitLog(t, "deprecated")
	if !strings.HasPrefix(line, "WARN") || !strings.Contains(line, "second") {
		t.Fatalf("log line %q", line)
	}
	// The last one has ended: the next deprecated abort takes the last
	// active one, then there is none.
	a.Send("copilot:abort", nil)
	if err := ftA.waitRan(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run of the remaining stream returned %v", err)
	}
	if s := a.WaitFor("copilot:idle", nil).Field("status"); s != "aborted" {
		t.Fatalf("status %v", s)
	}
	a.Send("copilot:abort", nil)
	if m := dataMap(t, a.WaitFor("error", nil)); m["code"] != protocol.CodeNotStreaming {
		t.Fatalf("deprecated abort with no stream: %v", m)
	}
}

// The mode: act by default; copilot:send's mode sets it (mode_changed when
// it differs); copilot:set_mode changes it at once, mid-stream, and the next
// permission request reads it. mode_changed goes to that conversation's
// subscribers only.
func TestModes(t *testing.T) {
	e := start(t, nil)
	cl, sub := e.subscribe("md")
	if sub.Field("mode") != "act" {
		t.Fatalf("default mode %s", sub.Raw)
	}
	bystander, _ := e.subscribe("md-other")

	ft := e.startTurn(cl, "md", "go", map[string]any{"mode": "plan"})
	// mode_changed came before the user message, which carries the mode.
	if d := ft.Host.Permission(ft.Ctx, session.PermissionRequest{ToolCallID: "a", ToolName: "bash"}); d.Allow || d.Reason != session.PlanDenialReason {
		t.Fatalf("plan decision %+v", d)
	}
	if ft.Host.Mode() != "plan" {
		t.Fatalf("Mode() = %s", ft.Host.Mode())
	}
	cl.Send("copilot:set_mode", map[string]any{"conversationId": "md", "mode": "act"})
	mc := cl.Expect("copilot:mode_changed")
	if m := keys(t, mc, "conversationId", "seq", "mode"); m["mode"] != "act" {
		t.Fatalf("mode_changed %s", mc.Raw)
	}
	// The same session, no new Open, and the next request is approved.
	if d := ft.Host.Permission(ft.Ctx, session.PermissionRequest{ToolCallID: "b"}); !d.Allow {
		t.Fatalf("act decision %+v", d)
	}
	if ft.Ctx.Err() != nil || len(e.agent.openCalls()) != 1 {
		t.Fatal("set_mode disturbed the stream or reopened the session")
	}
	ft.finish(nil)
	cl.Expect("copilot:idle")

	// A send without mode means act: no mode_changed while it is act.
	cl.Send("copilot:send", map[string]any{"conversationId": "md", "prompt": "two"})
	if um := cl.Expect("copilot:user_message"); um.Field("mode") != "act" {
		t.Fatalf("user_message %s", um.Raw)
	}
	e.agent.nextTurn(t).finish(nil)
	cl.Expect("copilot:idle")
	// In plan, a send without mode switches back to act and says so.
	cl.Send("copilot:set_mode", map[string]any{"conversationId": "md", "mode": "plan"})
	cl.Expect("copilot:mode_changed")
	cl.Send("copilot:send", map[string]any{"conversationId": "md", "prompt": "three"})
	if mc := cl.Expect("copilot:mode_changed"); mc.Field("mode") != "act" {
		t.Fatalf("mode_changed %s", mc.Raw)
	}
	cl.Expect("copilot:user_message")
	e.agent.nextTurn(t).finish(nil)
	cl.Expect("copilot:idle")

	expectQuiet(t, bystander)
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "md"})
	if s := cl.Expect("copilot:subscribed"); s.Field("mode") != "act" {
		t.Fatalf("subscribed %s", s.Raw)
	}
}

// A conversation's events and state are stored before they are sent, in
// batches.
func TestStoredBeforeSent(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("dur")
	ft := e.startTurn(cl, "dur", "go", nil)
	gate := e.store.close()
	ft.delta("m", "held")
	expectQuiet(t, cl) // the delta waits for its write
	e.store.open(gate)
	d := cl.Expect("copilot:delta")
	stored := storedFrames(t, e.store, "dur")
	if got := stored[len(stored)-1]; string(got.Frame) != string(d.Raw) || got.Seq != d.Seq() || got.Type != "copilot:delta" {
		t.Fatalf("stored %s, sent %s", got.Frame, d.Raw)
	}

	// Many events queued behind one slow write go out in few writes.
	gate = e.store.close()
	w0, _ := e.store.counts()
	for range 500 {
		ft.delta("m", "x")
	}
	e.store.open(gate)
	for range 500 {
		cl.Expect("copilot:delta")
	}
	if w1, _ := e.store.counts(); w1-w0 > 10 {
		t.Fatalf("500 events took %d writes: no group commit", w1-w0)
	}
	ft.finish(nil)
	cl.Expect("copilot:idle")
	meta, err := e.store.Conversation(context.Background(), "dur")
	if err != nil {
		t.Fatal(err)
	}
	if meta.LastSeq != 503 || meta.Streaming || meta.Title != "go" || meta.Mode != "act" {
		t.Fatalf("stored conversation %+v", meta)
	}
}
