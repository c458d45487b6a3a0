package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
)

// Subscribing to a conversation that does not exist yet is allowed: it
// starts empty, mode act, seq 0; nothing is replayed.
func TestSubscribeNew(t *testing.T) {
	e := start(t, nil)
	cl := e.dial()
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "new-1", "sinceSeq": 0})
	f := cl.Expect("copilot:subscribed")
	m := keys(t, f, "conversationId", "mode", "streaming", "seq", "epoch", "serverTime")
	if m["conversationId"] != "new-1" || m["mode"] != "act" || m["streaming"] != false || m["seq"] != 0.0 {
		t.Fatalf("subscribed %s", f.Raw)
	}
	if m["epoch"] != e.store.Epoch() || m["epoch"] == "" {
		t.Fatalf("epoch %v, want the store's %q", m["epoch"], e.store.Epoch())
	}
	expectQuiet(t, cl)
}

// Events carry conversationId and a seq growing by one, and go to that
// conversation's subscribers only.
func TestEventsGoToSubscribersOnly(t *testing.T) {
	e := start(t, nil)
	a, _ := e.subscribe("conv-a")
	a2, _ := e.subscribe("conv-a")
	b, _ := e.subscribe("conv-b")
	outsider := e.dial()

	ft := e.startTurn(a, "conv-a", "hello", nil)
	ft.delta("m", "one ")
	ft.delta("m", "two")
	ft.Host.Emit(session.Message{MessageID: "m", Content: "one two"})
	ft.finish(nil)
	for _, cl := range []*relaytest.Client{a, a2} {
		idle, frames := cl.WaitForCollect("copilot:idle", nil)
		frames = append(frames, idle)
		want := []string{"copilot:user_message", "copilot:delta", "copilot:delta", "copilot:message", "copilot:idle"}
		if cl == a {
			want = want[1:] // startTurn read the user message
		}
		if len(frames) != len(want) {
			t.Fatalf("got %s", framesString(frames))
		}
		for i, f := range frames {
			seq := int64(i + 1 + 5 - len(want))
			if f.Type != want[i] {
				t.Fatalf("frame %d is %s, want %s", i, f.Raw, want[i])
			}
			if f.Field("conversationId") != "conv-a" || f.Seq() != seq {
				t.Fatalf("frame %d: %s: want conversationId conv-a, seq %d", i, f.Raw, seq)
			}
		}
	}
	expectQuiet(t, b)
	expectQuiet(t, outsider)
}

// With sinceSeq the stored events after it are replayed in order, then
// copilot:subscribed names the last one; without it nothing is replayed.
func TestSubscribeReplay(t *testing.T) {
	e := start(t, nil)
	a, _ := e.subscribe("r")
	ft := e.startTurn(a, "r", "hello", nil)
	for i := range 5 {
		ft.delta("m", fmt.Sprint(i))
	}
	ft.finish(nil)
	a.WaitFor("copilot:idle", nil) // seq 7: user_message, 5 deltas, idle

	late := e.dial()
	late.Send("copilot:subscribe", map[string]any{"conversationId": "r", "sinceSeq": 3})
	sub, replay := late.WaitForCollect("copilot:subscribed", nil)
	if len(replay) != 4 {
		t.Fatalf("replay from 3: %s", framesString(replay))
	}
	for i, f := range replay {
		if f.Seq() != int64(4+i) {
			t.Fatalf("replay %d has seq %d, want %d", i, f.Seq(), 4+i)
		}
	}
	if replay[3].Type != "copilot:idle" || sub.Seq() != 7 || sub.Field("streaming") != false {
		t.Fatalf("after replay: %s then %s", replay[3].Raw, sub.Raw)
	}

	whole := e.dial()
	whole.Send("copilot:subscribe", map[string]any{"conversationId": "r", "sinceSeq": 0})
	_, replay = whole.WaitForCollect("copilot:subscribed", nil)
	if len(replay) != 7 || replay[0].Type != "copilot:user_message" || replay[0].Field("content") != "hello" {
		t.Fatalf("replay from 0: %s", framesString(replay))
	}

	plain := e.dial()
	plain.Send("copilot:subscribe", map[string]any{"conversationId": "r"})
	if f := plain.Next(); f.Type != "copilot:subscribed" || f.Seq() != 7 {
		t.Fatalf("subscribe without sinceSeq: %s", f.Raw)
	}
	// sinceSeq at or past the end replays nothing.
	plain.Send("copilot:subscribe", map[string]any{"conversationId": "r", "sinceSeq": 7})
	plain.Expect("copilot:subscribed")
	plain.Send("copilot:subscribe", map[string]any{"conversationId": "r", "sinceSeq": 99})
	plain.Expect("copilot:subscribed")
	expectQuiet(t, plain)
}

// Replay and live events join with no gap and no repeat, whenever the
// subscribe lands during a stream.
func TestSubscribeDuringStreamNoGapNoRepeat(t *testing.T) {
	e := start(t, nil)
	owner, _ := e.subscribe("s")
	ft := e.startTurn(owner, "s", "go", nil)
	const n = 3000
	const watchers = 8
	clients := make([]*relaytest.Client, watchers)
	for i := range clients {
		clients[i] = e.dial()
	}
	// The stream runs while the watchers subscribe, one every n/watchers
	// deltas, half of them with a sinceSeq in the replayed part.
	go func() {
		for i := range n {
			if i%(n/watchers) == 0 {
				w := i / (n / watchers)
				data := map[string]any{"conversationId": "s"}
				if w%2 == 1 {
					data["sinceSeq"] = rand.IntN(i + 1)
				} else {
					data["sinceSeq"] = 0
				}
				b, _ := json.Marshal(map[string]any{"type": "copilot:subscribe", "data": data})
				_ = clients[w].Conn.Write(context.Background(), websocket.MessageText, b)
			}
			ft.delta("m", fmt.Sprintf("%d ", i))
		}
		ft.finish(nil)
	}()
	for w, cl := range clients {
		var frames []relaytest.Frame
		var sub relaytest.Frame
		for {
			f := cl.Next()
			if f.Type == "copilot:subscribed" {
				sub = f
				if len(frames) > 0 && frames[len(frames)-1].Seq() != f.Seq() {
					t.Fatalf("watcher %d: subscribed seq %d after replaying up to %d", w, f.Seq(), frames[len(frames)-1].Seq())
				}
				if len(frames) > 0 && frames[len(frames)-1].Type == "copilot:idle" {
					break // subscribed after the stream ended: all was replay
				}
				continue
			}
			frames = append(frames, f)
			if f.Type == "copilot:idle" && sub.Type != "" {
				break
			}
		}
		first := frames[0].Seq()
		for j, f := range frames {
			if f.Seq() != first+int64(j) {
				t.Fatalf("watcher %d: frame %d has seq %d, want %d (gap or repeat)", w, j, f.Seq(), first+int64(j))
			}
		}
		if last := frames[len(frames)-1].Seq(); last != n+2 {
			t.Fatalf("watcher %d ended at seq %d, want %d", w, last, n+2)
		}
	}
}

func TestUnsubscribe(t *testing.T) {
	e := start(t, nil)
	a, _ := e.subscribe("u")
	b, _ := e.subscribe("u")
	b.Send("copilot:unsubscribe", map[string]any{"conversationId": "u"})
	b.Send("copilot:unsubscribe", map[string]any{"conversationId": "never-subscribed"})
	expectQuiet(t, b)
	ft := e.startTurn(a, "u", "hi", nil)
	ft.finish(nil)
	a.WaitFor("copilot:idle", nil)
	expectQuiet(t, b)
}

// copilot:send subscribes the sender implicitly.
func TestSendSubscribes(t *testing.T) {
	e := start(t, nil)
	cl := e.dial()
	cl.Send("copilot:send", map[string]any{"conversationId": "imp", "prompt": "hi"})
	sub := cl.Expect("copilot:subscribed")
	if sub.Seq() != 0 {
		t.Fatalf("subscribed %s", sub.Raw)
	}
	um := cl.Expect("copilot:user_message")
	if um.Seq() != 1 {
		t.Fatalf("user_message %s", um.Raw)
	}
	ft := e.agent.nextTurn(t)
	ft.delta("m", "x")
	ft.finish(nil)
	cl.Expect("copilot:delta")
	cl.Expect("copilot:idle")
}

// streamed makes conversation id with a finished turn of n deltas: its
// events are seq 1 (the user message) to n+2 (idle).
func (e *env) streamed(id string, n int) *relaytest.Client {
	e.t.Helper()
	cl, _ := e.subscribe(id)
	ft := e.startTurn(cl, id, "hello", nil)
	for i := range n {
		ft.delta("m", fmt.Sprint(i))
	}
	ft.finish(nil)
	cl.WaitFor("copilot:idle", nil)
	return cl
}

// seqsOf lists the frames' seqs.
func seqsOf(frames []relaytest.Frame) []int64 {
	out := make([]int64, len(frames))
	for i, f := range frames {
		out[i] = f.Seq()
	}
	return out
}

// The relay decides on the epoch: a subscribe carrying an epoch other than
// the relay's is replayed from seq 0, whatever its sinceSeq, and
// copilot:subscribed says reset. The same epoch, or none, is as before:
// from sinceSeq, and no reset key at all.
func TestSubscribeEpoch(t *testing.T) {
	e := start(t, nil)
	e.streamed("ep", 5) // seq 7
	epoch := e.store.Epoch()
	since := func(n int) *int { return &n }
	tests := []struct {
		name      string
		sinceSeq  *int
		epoch     string
		wantSeqs  string
		wantReset bool
	}{
		{"same epoch", since(5), epoch, "[6 7]", false},
		{"no epoch", since(5), "", "[6 7]", false},
		{"no epoch, no sinceSeq", nil, "", "[]", false},
		{"same epoch, up to date", since(7), epoch, "[]", false},
		{"other epoch", since(5), "not-" + epoch, "[1 2 3 4 5 6 7]", true},
		{"other epoch, up to date", since(7), "not-" + epoch, "[1 2 3 4 5 6 7]", true},
		{"other epoch, past the end", since(99), "not-" + epoch, "[1 2 3 4 5 6 7]", true},
		{"other epoch, no sinceSeq", nil, "not-" + epoch, "[1 2 3 4 5 6 7]", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := e.dial()
			data := map[string]any{"conversationId": "ep"}
			if tt.sinceSeq != nil {
				data["sinceSeq"] = *tt.sinceSeq
			}
			if tt.epoch != "" {
				data["epoch"] = tt.epoch
			}
			cl.Send("copilot:subscribe", data)
			sub, replay := cl.WaitForCollect("copilot:subscribed", nil)
			if got := fmt.Sprint(seqsOf(replay)); got != tt.wantSeqs {
				t.Fatalf("replayed seqs %s, want %s: %s", got, tt.wantSeqs, framesString(replay))
			}
			if tt.wantReset && (replay[0].Type != "copilot:user_message" || replay[0].Field("content") != "hello") {
				t.Fatalf("a reset replay does not start with the first event: %s", replay[0].Raw)
			}
			m := dataMap(t, sub)
			reset, has := m["reset"]
			switch {
			case tt.wantReset && reset != true:
				t.Fatalf("subscribed %s: want reset true", sub.Raw)
			case !tt.wantReset && has:
				t.Fatalf("subscribed %s: want no reset key", sub.Raw)
			}
			if sub.Seq() != 7 || m["epoch"] != epoch {
				t.Fatalf("subscribed %s: want seq 7 and the relay's epoch %q", sub.Raw, epoch)
			}
			expectQuiet(t, cl)
		})
	}

	// A conversation the relay does not have yet: nothing to replay, but the
	// client's copy is still of another history.
	cl := e.dial()
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "ep-new", "sinceSeq": 3, "epoch": "not-" + epoch})
	if f := cl.Next(); f.Type != "copilot:subscribed" || f.Seq() != 0 || f.Field("reset") != true {
		t.Fatalf("subscribe to an empty conversation with another epoch: %s", f.Raw)
	}
	expectQuiet(t, cl)
}

// The case the epoch is for: the relay lost its history (a new store) and
// the conversation started over with fewer events than the client saw. With
// the old epoch the client gets the new history whole; with sinceSeq alone
// it would get nothing.
func TestSubscribeEpochAfterNewHistory(t *testing.T) {
	old := start(t, nil)
	old.streamed("moved", 5) // seq 7 in the old history
	oldEpoch := old.store.Epoch()
	old.srv.Close() // before the second relay starts, for its leak check

	e := start(t, nil)
	e.streamed("moved", 1) // seq 3 in the new one
	if e.store.Epoch() == oldEpoch {
		t.Fatal("two memory stores share an epoch")
	}
	cl := e.dial()
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "moved", "sinceSeq": 7, "epoch": oldEpoch})
	sub, replay := cl.WaitForCollect("copilot:subscribed", nil)
	if got := fmt.Sprint(seqsOf(replay)); got != "[1 2 3]" {
		t.Fatalf("replayed %s, want the new history [1 2 3]: %s", got, framesString(replay))
	}
	if sub.Field("reset") != true || sub.Field("epoch") != e.store.Epoch() || sub.Seq() != 3 {
		t.Fatalf("subscribed %s", sub.Raw)
	}
}

// A reset replay joins a running stream as any replay does: every event from
// seq 1 on, once, in order, then the live ones.
func TestSubscribeEpochDuringStream(t *testing.T) {
	e := start(t, nil)
	owner, _ := e.subscribe("live")
	ft := e.startTurn(owner, "live", "go", nil)
	const n = 2000
	watcher := e.dial()
	go func() {
		for i := range n {
			if i == n/2 {
				b, _ := json.Marshal(map[string]any{"type": "copilot:subscribe", "data": map[string]any{
					"conversationId": "live", "sinceSeq": i, "epoch": "stale"}})
				_ = watcher.Conn.Write(context.Background(), websocket.MessageText, b)
			}
			ft.delta("m", fmt.Sprintf("%d ", i))
		}
		ft.finish(nil)
	}()
	var frames []relaytest.Frame
	var sub relaytest.Frame
	for {
		f := watcher.Next()
		if f.Type == "copilot:subscribed" {
			sub = f
			if len(frames) > 0 && frames[len(frames)-1].Seq() != f.Seq() {
				t.Fatalf("subscribed seq %d after replaying up to %d", f.Seq(), frames[len(frames)-1].Seq())
			}
			if len(frames) > 0 && frames[len(frames)-1].Type == "copilot:idle" {
				break
			}
			continue
		}
		frames = append(frames, f)
		if f.Type == "copilot:idle" && sub.Type != "" {
			break
		}
	}
	if sub.Field("reset") != true {
		t.Fatalf("subscribed %s: want reset", sub.Raw)
	}
	for i, f := range frames {
		if f.Seq() != int64(i+1) {
			t.Fatalf("frame %d has seq %d, want %d (gap or repeat)", i, f.Seq(), i+1)
		}
	}
	if last := frames[len(frames)-1].Seq(); last != n+2 {
		t.Fatalf("ended at seq %d, want %d", last, n+2)
	}
}

// stepStore lets the test pass the committer's writes one at a time: each
// Write reports the types of its events on entered and waits for a token on
// pass (or for pass to be closed).
type stepStore struct {
	history.Store
	entered chan []string
	pass    chan struct{}
}

func (s *stepStore) Write(ctx context.Context, b history.Batch) error {
	types := make([]string, len(b.Events))
	for i, e := range b.Events {
		types[i] = e.Type
	}
	s.entered <- types
	<-s.pass
	return s.Store.Write(ctx, b)
}

// copilot:subscribed describes one moment: the state after event seq. A
// late subscriber that arrives while the end of a turn is being stored (the
// idle emitted, not yet sent) must not hear streaming: false and then the
// rest of the turn, idle included; nor the new mode and then the
// mode_changed that sets it; nor a question as pending and then the event
// that opens it.
func TestSubscribedDescribesOneMoment(t *testing.T) {
	checkNoLeaks(t)
	st := &stepStore{Store: history.NewMemory(), entered: make(chan []string), pass: make(chan struct{})}
	agent := newFakeAgent()
	srv := relaytest.Start(t, relay.Config{Agent: agent, Store: st})
	stepping := true
	t.Cleanup(func() {
		if stepping {
			close(st.pass)
		}
	})
	// passUntil lets writes through until one holds an event of type
	// stop; that write is left waiting, its events emitted but not sent.
	passUntil := func(stop string) {
		t.Helper()
		for {
			select {
			case types := <-st.entered:
				if slices.Contains(types, stop) {
					return
				}
				st.pass <- struct{}{}
			case <-time.After(wait):
				t.Fatalf("no write with %s within %s", stop, wait)
			}
		}
	}
	// release lets every write through from now on.
	release := func() {
		stepping = false
		close(st.pass)
		go func() {
			for range st.entered {
			}
		}()
	}

	// lateSubscriber subscribes a new connection while a write waits;
	// the next frame after copilot:subscribed, once that write is passed,
	// must be the event right after its seq.
	lateSubscriber := func(held string) map[string]any {
		t.Helper()
		cl := srv.Dial(t)
		cl.Send("copilot:subscribe", map[string]any{"conversationId": "m"})
		sub := cl.Expect("copilot:subscribed")
		st.pass <- struct{}{}
		next := cl.WaitFor(held, nil)
		if next.Seq() <= sub.Seq() {
			t.Fatalf("subscribed at seq %d, then %s", sub.Seq(), next.Raw)
		}
		return dataMap(t, sub)
	}

	owner := srv.Dial(t)
	owner.Send("copilot:send", map[string]any{"conversationId": "m", "prompt": "go"})
	passUntil("copilot:user_message")
	st.pass <- struct{}{}
	owner.WaitFor("copilot:user_message", nil)
	ft := agent.nextTurn(t)

	// A question opens: its event waits to be stored.
	ft.delta("a", "hello ")
	ask := ft.ask(session.InputRequest{Question: "Go on?"})
	passUntil("copilot:user_input_request")
	if m := lateSubscriber("copilot:user_input_request"); m["pendingInput"] != nil {
		t.Errorf("subscribed carries a question, then the event that opens it comes: %v", m)
	}
	req := owner.WaitFor("copilot:user_input_request", nil)

	// It is answered: the closing event waits.
	owner.Send("copilot:user_input_response", map[string]any{"conversationId": "m", "requestId": req.Field("requestId"), "answer": "yes"})
	passUntil("copilot:user_input_closed")
	if m := lateSubscriber("copilot:user_input_closed"); m["pendingInput"] == nil {
		t.Errorf("subscribed has no question, then the question's copilot:user_input_closed comes: %v", m)
	}
	if got := waitAsk(t, ask); got.err != nil {
		t.Fatalf("Ask: %v", got.err)
	}

	// The mode changes: copilot:mode_changed waits.
	owner.Send("copilot:set_mode", map[string]any{"conversationId": "m", "mode": "plan"})
	passUntil("copilot:mode_changed")
	if m := lateSubscriber("copilot:mode_changed"); m["mode"] != "act" {
		t.Errorf("subscribed says mode %v, then the copilot:mode_changed that sets it comes", m["mode"])
	}

	// The turn ends: the idle waits.
	ft.finish(nil)
	passUntil("copilot:idle")
	if m := lateSubscriber("copilot:idle"); m["streaming"] != true {
		t.Errorf("subscribed says streaming false, then the turn's copilot:idle comes: %v", m)
	}
	release()

	// With nothing waiting, a subscriber sees the turn over, in plan.
	done := srv.Dial(t)
	done.Send("copilot:subscribe", map[string]any{"conversationId": "m"})
	if m := dataMap(t, done.Expect("copilot:subscribed")); m["streaming"] != false || m["mode"] != "plan" || m["pendingInput"] != nil {
		t.Errorf("after the turn: %v", m)
	}
}
