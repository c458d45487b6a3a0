package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
)

func TestList(t *testing.T) {
	e := start(t, nil)
	cl := e.dial()
	cl.Send("copilot:list", nil)
	f := cl.Expect("copilot:conversations")
	if string(f.Data) != `{"conversations":[]}` {
		t.Fatalf("empty list %s", f.Raw)
	}
	for i, id := range []string{"l1", "l2"} {
		ft := e.startTurn(cl, id, fmt.Sprintf("prompt %d", i), map[string]any{"mode": []string{"act", "plan"}[i]})
		if i == 1 {
			// l2 is streaming while listed
			cl.Send("copilot:list", nil)
			f = cl.WaitFor("copilot:conversations", nil)
			ft.finish(nil)
			break
		}
		ft.finish(nil)
		cl.WaitFor("copilot:idle", nil)
		time.Sleep(5 * time.Millisecond) // distinct updatedAt
	}
	var list protocol.Conversations
	f.Decode(t, &list)
	if len(list.Conversations) != 2 {
		t.Fatalf("list %s", f.Raw)
	}
	for _, c := range dataMap(t, f)["conversations"].([]any) {
		m := c.(map[string]any)
		if len(m) != 9 || m["waitingInput"] != false || m["createdAt"] == nil || m["agent"] != "fake" || m["workspace"] == nil {
			t.Fatalf("entry keys %v, waitingInput %v", mapKeys(m), m["waitingInput"])
		}
	}
	first, second := list.Conversations[0], list.Conversations[1]
	if first.ConversationID != "l2" || !first.Streaming || first.Mode != "plan" || first.Title != "prompt 1" ||
		second.ConversationID != "l1" || second.Streaming || second.Mode != "act" {
		t.Fatalf("list (most recent first) %s", f.Raw)
	}
	for _, c := range list.Conversations {
		if _, err := time.Parse(time.RFC3339, c.UpdatedAt); err != nil {
			t.Fatalf("updatedAt %q: %v", c.UpdatedAt, err)
		}
	}
	// A conversation only subscribed to (no event) is not listed.
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "empty"})
	cl.WaitFor("copilot:subscribed", func(f relaytest.Frame) bool { return f.Field("conversationId") == "empty" })
	cl.Send("copilot:list", nil)
	cl.WaitFor("copilot:conversations", nil).Decode(t, &list)
	if len(list.Conversations) != 2 {
		t.Fatalf("an empty conversation is listed: %+v", list)
	}
}

// A conversation whose agent waits for an answer is listed with
// waitingInput, and without once it is answered.
func TestListWaitingInput(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("wi")
	ft := e.startTurn(cl, "wi", "ask", nil)
	res := ft.ask(session.InputRequest{Question: "Name?"})
	req := cl.Expect("copilot:user_input_request")
	waiting := func() any {
		cl.Send("copilot:list", nil)
		var list protocol.Conversations
		cl.WaitFor("copilot:conversations", nil).Decode(t, &list)
		if len(list.Conversations) != 1 {
			t.Fatalf("list %+v", list)
		}
		return list.Conversations[0].WaitingInput
	}
	if !waiting().(bool) {
		t.Fatal("a conversation waiting for an answer is listed without waitingInput")
	}
	cl.Send("copilot:user_input_response", map[string]any{"conversationId": "wi", "requestId": req.Field("requestId"), "answer": "Ada"})
	if r := waitAsk(t, res); r.err != nil || r.answer.Text != "Ada" {
		t.Fatalf("Ask: %+v", r)
	}
	// The list says what the clients were sent: the question is over for
	// it once its close went out, which may come after the agent has its
	// answer (a clean-clone make test listed it as still waiting).
	cl.WaitFor("copilot:user_input_closed", nil)
	if waiting().(bool) {
		t.Fatal("an answered conversation is listed with waitingInput")
	}
	ft.finish(nil)
}

func TestClose(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("cl")
	ft := e.startTurn(cl, "cl", "one", nil)
	ft.finish(nil)
	cl.Expect("copilot:idle")

	// The agent reports no usage while closing: a zero shutdown follows.
	cl.Send("copilot:close", map[string]any{"conversationId": "cl"})
	sd := cl.Expect("copilot:shutdown")
	m := keys(t, sd, "conversationId", "seq", "totalPremiumRequests", "modelMetrics")
	if m["totalPremiumRequests"] != 0.0 || string(mustJSON(m["modelMetrics"])) != "{}" {
		t.Fatalf("shutdown %s", sd.Raw)
	}
	if got := e.agent.closeCalls(); len(got) != 1 || got[0] != "cl" {
		t.Fatalf("Session.Close calls %v", got)
	}
	// The next send opens a new session that resumes the conversation.
	ft = e.startTurn(cl, "cl", "two", nil)
	opens := e.agent.openCalls()
	if len(opens) != 2 || !opens[1].Opts.Resume {
		t.Fatalf("opens %+v", opens)
	}

	// Close while streaming: the turn is aborted first; the agent's own
	// shutdown is the one sent.
	e.agent.mu.Lock()
	e.agent.onClose = func(h session.Host) {
		h.Emit(session.Shutdown{TotalPremiumRequests: 3, ModelMetrics: json.RawMessage(`{"m":{"requests":{"count":3}}}`)})
	}
	e.agent.mu.Unlock()
	ft.delta("m", "partial")
	cl.Send("copilot:close", map[string]any{"conversationId": "cl"})
	if err := ft.waitRan(t); err == nil {
		t.Fatal("Run was not cancelled by close")
	}
	idle, _ := cl.WaitForCollect("copilot:idle", nil)
	if idle.Field("status") != "aborted" {
		t.Fatalf("idle %s", idle.Raw)
	}
	sd = cl.Expect("copilot:shutdown")
	if sd.Field("totalPremiumRequests") != 3.0 {
		t.Fatalf("shutdown %s", sd.Raw)
	}
	expectQuiet(t, cl) // only one shutdown

	// Closing a conversation without a session still answers.
	cl.Send("copilot:close", map[string]any{"conversationId": "cl"})
	cl.Expect("copilot:shutdown")
}

// Every copilot:close is answered, also one sent while another is under
// way after that one's shutdown went out (the agent emits it while its
// session closes, before the close is done): it gets a shutdown of its own.
func TestCloseWhileClosing(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("cc")
	e.startTurn(cl, "cc", "one", nil).finish(nil)
	cl.Expect("copilot:idle")

	release := make(chan struct{})
	e.agent.mu.Lock()
	e.agent.onClose = func(h session.Host) {
		h.Emit(session.Shutdown{TotalPremiumRequests: 2, ModelMetrics: json.RawMessage(`{}`)})
		<-release // the close is not done yet
	}
	e.agent.mu.Unlock()
	cl.Send("copilot:close", map[string]any{"conversationId": "cc"})
	if sd := cl.Expect("copilot:shutdown"); sd.Field("totalPremiumRequests") != 2.0 {
		t.Fatalf("shutdown %s", sd.Raw)
	}
	cl.Send("copilot:close", map[string]any{"conversationId": "cc"})
	expectQuiet(t, cl) // the first close is still under way
	close(release)
	if sd := cl.Expect("copilot:shutdown"); sd.Field("totalPremiumRequests") != 0.0 {
		t.Fatalf("the second close's shutdown %s", sd.Raw)
	}
	expectQuiet(t, cl)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func TestDelete(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("del")
	watcher, _ := e.subscribe("del")
	ft := e.startTurn(cl, "del", "doomed", nil)
	ft.delta("m", "x")
	watcher.WaitFor("copilot:delta", nil)

	cl.Send("copilot:delete", map[string]any{"conversationId": "del"})
	if err := ft.waitRan(t); err == nil {
		t.Fatal("the stream was not aborted by delete")
	}
	for _, c := range []*relaytest.Client{cl, watcher} {
		idle, _ := c.WaitForCollect("copilot:idle", nil)
		if idle.Field("status") != "aborted" {
			t.Fatalf("idle %s", idle.Raw)
		}
		d := c.Expect("copilot:deleted")
		if m := keys(t, d, "conversationId", "seq"); m["conversationId"] != "del" || d.Seq() != idle.Seq()+1 {
			t.Fatalf("deleted %s after %s", d.Raw, idle.Raw)
		}
	}
	if got := e.agent.closeCalls(); len(got) != 1 {
		t.Fatalf("Session.Close calls %v", got)
	}
	if evs := storedFrames(t, e.store, "del"); len(evs) != 0 {
		t.Fatalf("%d events left in the store", len(evs))
	}
	if _, err := e.store.Conversation(context.Background(), "del"); err != history.ErrNotFound {
		t.Fatalf("stored conversation after delete: %v", err)
	}
	cl.Send("copilot:list", nil)
	if f := cl.Expect("copilot:conversations"); string(f.Data) != `{"conversations":[]}` {
		t.Fatalf("list after delete %s", f.Raw)
	}
	// It is new again: seq 0, nothing replayed, act; the old subscription
	// is gone.
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "del", "sinceSeq": 0})
	if s := cl.Expect("copilot:subscribed"); s.Seq() != 0 || s.Field("streaming") != false {
		t.Fatalf("subscribed after delete %s", s.Raw)
	}
	ft = e.startTurn(cl, "del", "reborn", nil)
	ft.finish(nil)
	cl.WaitFor("copilot:idle", nil)
	expectQuiet(t, watcher)
	if evs := storedFrames(t, e.store, "del"); len(evs) != 2 || evs[0].Seq != 1 {
		t.Fatalf("stored after rebirth: %d events", len(evs))
	}
	// Deleting an unknown conversation is harmless; copilot:deleted goes to
	// subscribers only.
	cl.Send("copilot:delete", map[string]any{"conversationId": "never"})
	expectQuiet(t, cl)
}

// A subscriber that stops reading is disconnected with a clear reason when
// its queue overflows; the others and the stream are not slowed; it resumes
// with sinceSeq and loses nothing.
func TestSlowConsumer(t *testing.T) {
	parallel(t)
	e := start(t, func(c *relay.Config) { c.SendQueue = 64 })
	fast, _ := e.subscribe("slow")
	stalled, err := relaytest.DialConn(e.srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.CloseNow()
	ctx, cancel := context.WithTimeout(context.Background(), 3*wait)
	defer cancel()
	if err := stalled.Write(ctx, websocket.MessageText, []byte(`{"type":"copilot:subscribe","data":{"conversationId":"slow"}}`)); err != nil {
		t.Fatal(err)
	}
	// The subscribe has landed once its answer is read: the stalled client
	// reads that one frame and no more. A frame of the turn sent before
	// it landed would not reach the stalled client, whose first seq would
	// then not be 1.
	if _, data, err := stalled.Read(ctx); err != nil || !strings.Contains(string(data), `"copilot:subscribed"`) {
		t.Fatalf("the stalled client's subscribe: %s, %v", data, err)
	}

	// The stalled client reads once the relay has given up on it (said
	// "too far behind"): what reached it, then the close. From then on the
	// relay has closeGrace (15 s) to write those frames and the close
	// before it drops the connection without one, and on a busy machine
	// the rest of the stream took longer than that: reading only after
	// the turn's end saw an EOF, not the close.
	type stalledEnd struct {
		seen []int64
		err  error
	}
	stalledDone := make(chan stalledEnd, 1)
	go func() {
		for !strings.Contains(e.logs.all(), "too far behind") {
			select {
			case <-ctx.Done():
				stalledDone <- stalledEnd{err: ctx.Err()}
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		var end stalledEnd
		for {
			_, data, err := stalled.Read(ctx)
			if err != nil {
				end.err = err
				break
			}
			var f relaytest.Frame
			json.Unmarshal(data, &f)
			if f.Type != "copilot:subscribed" {
				end.seen = append(end.seen, f.Seq())
			}
		}
		stalledDone <- end
	}()

	ft := e.startTurn(fast, "slow", "flood", nil)
	// The agent streams at the pace of the fast reader (a real model is far
	// slower); the stalled one falls behind.
	const n = 2000
	chunk := strings.Repeat("z", 8<<10)
	for i := range n {
		ft.delta("m", fmt.Sprintf("%06d%s", i, chunk))
		if i%16 == 15 {
			for range 16 {
				fast.Expect("copilot:delta")
			}
		}
	}
	ft.finish(nil) // the agent never waited on the stalled reader
	for range n % 16 {
		fast.Expect("copilot:delta")
	}
	fast.Expect("copilot:idle")
	e.logs.waitLog(t, "too far behind")
	end := <-stalledDone
	seen, closeErr := end.seen, end.err
	if code := websocket.CloseStatus(closeErr); code != relay.CloseTooSlow {
		t.Fatalf("stalled client ended with %v, want close %d", closeErr, relay.CloseTooSlow)
	}
	if !strings.Contains(closeErr.Error(), "sinceSeq") {
		t.Fatalf("close reason %v does not say how to resume", closeErr)
	}
	last := int64(0)
	for i, s := range seen {
		if s != int64(i+1) {
			t.Fatalf("stalled client: frame %d has seq %d", i, s)
		}
		last = s
	}
	if last >= n+2 {
		t.Fatalf("the stalled client got everything (%d): the test did not stall it", last)
	}

	// It resumes from what it saw and gets the rest, in order.
	again := e.dial()
	again.Send("copilot:subscribe", map[string]any{"conversationId": "slow", "sinceSeq": last})
	sub, replay := again.WaitForCollect("copilot:subscribed", nil)
	for i, f := range replay {
		if f.Seq() != last+1+int64(i) {
			t.Fatalf("resume: frame %d has seq %d, want %d", i, f.Seq(), last+1+int64(i))
		}
	}
	if sub.Seq() != n+2 || (len(replay) > 0 && replay[len(replay)-1].Type != "copilot:idle") {
		t.Fatalf("resume ended at %s", sub.Raw)
	}
}

// A relay that crashed left a turn streaming and a question open: the next
// start closes both in the stored history, and everything else carries on.
func TestRestartAfterCrash(t *testing.T) {
	checkNoLeaks(t)
	store := history.NewMemory()
	frame := func(typ string, data any) []byte {
		b, err := protocol.Encode(typ, data)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ctx := context.Background()
	now := time.Now().Add(-time.Hour)
	pending := protocol.UserInputRequest{Header: protocol.Header{ConversationID: "crashed", Seq: 3}, RequestID: "req-1", Question: "Deploy?", AllowFreeform: true}
	pendingJSON, _ := json.Marshal(pending)
	err := store.Write(ctx, history.Batch{
		Conversations: []history.Conversation{{ID: "crashed", Title: "Crashed turn", Mode: "plan", CreatedAt: now, UpdatedAt: now,
			LastSeq: 3, Streaming: true, PendingInput: pendingJSON, Model: "gpt-5"}},
		Events: []history.Event{
			{ConversationID: "crashed", Seq: 1, Type: protocol.TypeUserMessage, Frame: frame(protocol.TypeUserMessage, &protocol.UserMessage{Header: protocol.Header{ConversationID: "crashed", Seq: 1}, MessageID: "u", Content: "deploy", Mode: "plan"})},
			{ConversationID: "crashed", Seq: 2, Type: protocol.TypeDelta, Frame: frame(protocol.TypeDelta, &protocol.Delta{Header: protocol.Header{ConversationID: "crashed", Seq: 2}, MessageID: "m", Content: "Checking"})},
			{ConversationID: "crashed", Seq: 3, Type: protocol.TypeUserInputRequest, Frame: frame(protocol.TypeUserInputRequest, &pending)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	agent := newFakeAgent()
	srv := relaytest.Start(t, relay.Config{Agent: agent, Store: store})
	cl := srv.Dial(t)
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "crashed", "sinceSeq": 2})
	sub, replay := cl.WaitForCollect("copilot:subscribed", nil)
	if len(replay) != 3 {
		t.Fatalf("replay %s", framesString(replay))
	}
	closed, idle := replay[1], replay[2]
	if closed.Type != "copilot:user_input_closed" || closed.Seq() != 4 || closed.Field("requestId") != "req-1" || closed.Field("reason") != "aborted" {
		t.Fatalf("closed %s", closed.Raw)
	}
	if idle.Type != "copilot:idle" || idle.Seq() != 5 || idle.Field("status") != "error" || idle.Field("message") != "relay restarted" {
		t.Fatalf("idle %s", idle.Raw)
	}
	if sub.Seq() != 5 || sub.Field("streaming") != false || sub.Field("pendingInput") != nil || sub.Field("mode") != "plan" || sub.Field("epoch") != store.Epoch() {
		t.Fatalf("subscribed %s", sub.Raw)
	}
	cl.Send("copilot:list", nil)
	var list protocol.Conversations
	cl.Expect("copilot:conversations").Decode(t, &list)
	if len(list.Conversations) != 1 || list.Conversations[0].Title != "Crashed turn" || list.Conversations[0].Mode != "plan" || list.Conversations[0].Streaming {
		t.Fatalf("list %+v", list)
	}
	// seq goes on; the agent session resumes, with the stored model.
	cl.Send("copilot:send", map[string]any{"conversationId": "crashed", "prompt": "again", "mode": "plan"})
	if um := cl.Expect("copilot:user_message"); um.Seq() != 6 {
		t.Fatalf("user_message %s", um.Raw)
	}
	ft := agent.nextTurn(t)
	ft.finish(nil)
	cl.Expect("copilot:idle")
	if opens := agent.openCalls(); len(opens) != 1 || !opens[0].Opts.Resume || opens[0].Opts.Model != "gpt-5" {
		t.Fatalf("opens %+v", opens)
	}
}

// A clean restart on the same SQLite data dir: the history, seq, epoch,
// mode and title carry over; a stream open at Close is stored as aborted.
func TestRestartSQLite(t *testing.T) {
	checkNoLeaks(t)
	dir := t.TempDir()
	ctx := context.Background()
	open := func() history.Store {
		st, err := sqlite.Open(ctx, dir, sqlite.Options{Synchronous: "NORMAL"})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	store := open()
	agent := newFakeAgent()
	srv := relaytest.Start(t, relay.Config{Agent: agent, Store: store})
	cl := srv.Dial(t)
	cl.Send("copilot:send", map[string]any{"conversationId": "sq", "prompt": "Keep me", "mode": "plan"})
	cl.WaitFor("copilot:user_message", nil)
	ft := agent.nextTurn(t)
	for i := range 100 {
		ft.delta("m", fmt.Sprint(i))
	}
	ft.finish(nil)
	cl.WaitFor("copilot:idle", nil)
	ft = func() *fakeTurn {
		cl.Send("copilot:send", map[string]any{"conversationId": "sq", "prompt": "cut short", "mode": "plan"})
		cl.WaitFor("copilot:user_message", func(f relaytest.Frame) bool { return f.Field("content") == "cut short" })
		return agent.nextTurn(t)
	}()
	ft.delta("m2", "half")
	cl.WaitFor("copilot:delta", func(f relaytest.Frame) bool { return f.Field("content") == "half" })
	epoch := store.Epoch()
	srv.Close() // aborts the stream, flushes, closes the connection (1001)
	code, _ := cl.WaitClosed()
	if code != websocket.StatusGoingAway {
		t.Fatalf("close code %d", code)
	}
	if len(agent.closeCalls()) != 1 {
		t.Fatalf("the agent session was not closed: %v", agent.closeCalls())
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	store = open()
	t.Cleanup(func() { store.Close() })
	agent2 := newFakeAgent()
	srv2 := relaytest.Start(t, relay.Config{Agent: agent2, Store: store})
	cl2 := srv2.Dial(t)
	cl2.Send("copilot:subscribe", map[string]any{"conversationId": "sq", "sinceSeq": 0})
	sub, replay := cl2.WaitForCollect("copilot:subscribed", nil)
	for i, f := range replay {
		if f.Seq() != int64(i+1) {
			t.Fatalf("replay %d: seq %d", i, f.Seq())
		}
	}
	n := len(replay)
	// mode_changed, user, 100 deltas, idle, user, delta, partial message,
	// idle aborted
	if n != 107 || replay[0].Type != "copilot:mode_changed" || replay[n-2].Type != "copilot:message" || replay[n-2].Field("content") != "half" ||
		replay[n-1].Field("status") != "aborted" || replay[n-1].Field("message") != "relay restarted" {
		t.Fatalf("replay of %d ends %s", n, framesString(replay[max(0, n-3):]))
	}
	if sub.Seq() != int64(n) || sub.Field("epoch") != epoch || sub.Field("mode") != "plan" {
		t.Fatalf("subscribed %s", sub.Raw)
	}
	cl2.Send("copilot:send", map[string]any{"conversationId": "sq", "prompt": "more", "mode": "plan"})
	if um := cl2.Expect("copilot:user_message"); um.Seq() != int64(n+1) {
		t.Fatalf("seq after restart %s", um.Raw)
	}
	agent2.nextTurn(t).finish(nil)
	cl2.Expect("copilot:idle")
	cl2.Send("copilot:list", nil)
	var list protocol.Conversations
	cl2.Expect("copilot:conversations").Decode(t, &list)
	if len(list.Conversations) != 1 || list.Conversations[0].Title != "Keep me" {
		t.Fatalf("list %+v", list)
	}
}

// Close sends what is queued, then closes every connection with 1001; it
// does not close the Store; a second Close is harmless.
func TestRelayClose(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("rc")
	ft := e.startTurn(cl, "rc", "go", nil)
	res := ft.ask(session.InputRequest{Question: "still there?"})
	cl.Expect("copilot:user_input_request")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := e.srv.Relay.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if r := waitAsk(t, res); r.err == nil {
		t.Fatal("Ask was not cancelled")
	}
	if c := cl.Expect("copilot:user_input_closed"); c.Field("reason") != "aborted" {
		t.Fatalf("closed %s", c.Raw)
	}
	if s := cl.Expect("copilot:idle").Field("status"); s != "aborted" {
		t.Fatalf("status %v", s)
	}
	if code, reason := cl.WaitClosed(); code != websocket.StatusGoingAway || reason == "" {
		t.Fatalf("close %d %q", code, reason)
	}
	if err := e.srv.Relay.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The store still works and holds the aborted turn.
	evs := storedFrames(t, e.store, "rc")
	if last := evs[len(evs)-1]; last.Type != protocol.TypeIdle {
		t.Fatalf("last stored %s", last.Frame)
	}
	// New connections are refused.
	if _, err := relaytest.DialConn(e.srv.URL, ""); err == nil {
		t.Fatal("a connection was accepted after Close")
	}
}
