package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/coder/websocket"

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
	m := keys(t, f, "conversationId", "mode", "streaming", "seq", "epoch")
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
