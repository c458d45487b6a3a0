package relay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// Following only what is watched (docs/scale-out.md): a relay gets the live
// events of a conversation another relay runs only while a client of its
// own watches it; its list hears of the others from their owners' record
// changes.

// followScript is clusterScript with a turn long enough to join mid-way:
// 400 deltas, 5 ms apart.
func followScript(t *testing.T) *script.Script {
	t.Helper()
	var steps []string
	for i := range 400 {
		steps = append(steps, fmt.Sprintf(`{"delta": "m%d "}`, i), `{"sleep": "5ms"}`)
	}
	src := `{"turns": [
	  {"match": "middle", "steps": [` + strings.Join(steps, ",") + `]},
	  {"match": "question", "steps": [{"delta": "Asking. "}, {"ask": {"question": "Which?", "choices": ["left", "right"], "allowFreeform": false}}, {"delta": "You said {{answer}}."}]},
	  {"steps": [{"delta": "Echo: {{prompt}}"}]}
	]}`
	s, err := script.Parse("follow.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// followPair starts relays A and B running followScript, B with the
// linger given, and a client on each.
func (b testBackend) followPair(t *testing.T, name string, linger time.Duration) (a, bb *member, ca, cb *relaytest.Client, id string) {
	t.Helper()
	s := followScript(t)
	a = b.relayWith(t, 0, s, jetstream.ClusterOptions{Lease: testLease})
	bb = b.relayMod(t, 1, script.New(s), jetstream.ClusterOptions{Lease: testLease}, func(c *relay.Config) { c.FollowLinger = linger })
	return a, bb, a.srv.Dial(t), bb.srv.Dial(t), name + "-" + b.name
}

// waitFollowed waits until m follows n conversations.
func waitFollowed(t *testing.T, m *member, n int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for m.stats().Followed != n {
		if time.Now().After(deadline) {
			t.Fatalf("the relay follows %d conversations, want %d", m.stats().Followed, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// listedAs waits on cl, which watches the list, for conversation id's
// entry to contain every one of want.
func listedAs(t *testing.T, cl *relaytest.Client, id string, want ...string) relaytest.Frame {
	t.Helper()
	return cl.WaitFor("copilot:conversation", func(f relaytest.Frame) bool {
		s := string(f.Raw)
		if !strings.Contains(s, `"conversationId":"`+id+`"`) {
			return false
		}
		for _, w := range want {
			if !strings.Contains(s, w) {
				return false
			}
		}
		return true
	})
}

// A relay no client of which watches a conversation gets none of its live
// messages while another relay streams it, and its watched list still
// hears of it: new, its title, streaming and a question open, its mode,
// streaming off, and its delete.
func TestClusterFollowNothing(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		_, bb, ca, cb, id := b.followPair(t, "nothing", time.Second)
		cb.Send("copilot:list", map[string]any{"watch": true})
		cb.Expect("copilot:conversations")

		send(ca, id, "question please")
		req := ca.WaitFor("copilot:user_input_request", nil)
		listedAs(t, cb, id, `"title":"question please"`, `"streaming":true`, `"waitingInput":true`)

		ca.Send("copilot:set_mode", map[string]any{"conversationId": id, "mode": "plan"})
		ca.WaitFor("copilot:mode_changed", nil)
		listedAs(t, cb, id, `"mode":"plan"`)

		ca.Send("copilot:user_input_response", map[string]any{"conversationId": id, "requestId": req.Field("requestId"), "answer": "left"})
		ca.WaitFor("copilot:idle", nil)
		entry := listedAs(t, cb, id, `"streaming":false`)
		if strings.Contains(string(entry.Raw), `"waitingInput":true`) {
			t.Fatalf("B lists the question open after the turn: %s", entry.Raw)
		}

		// A long turn B's list hears of, B receiving none of its events.
		other := id + "-2"
		send(ca, other, "middle please")
		listedAs(t, cb, other, `"streaming":true`)
		ca.WaitFor("copilot:idle", nil)
		listedAs(t, cb, other, `"streaming":false`)

		ca.Send("copilot:delete", map[string]any{"conversationId": id})
		ca.WaitFor("copilot:deleted", nil)
		listedAs(t, cb, id, `"deleted":true`)

		if st := bb.stats(); st.LiveMessages != 0 || st.Followed != 0 || st.Wide {
			t.Fatalf("B, watching nothing, got %+v", st)
		}
		// Its list, asked again, says the same.
		cb.Send("copilot:list", nil)
		list := cb.WaitFor("copilot:conversations", nil)
		if strings.Contains(string(list.Raw), `"conversationId":"`+id+`"`) || !strings.Contains(string(list.Raw), `"conversationId":"`+other+`"`) {
			t.Fatalf("B's list %s", list.Raw)
		}
	})
}

// Subscribers that come to relay B while relay A streams a turn get it with
// no gap and no repeat, each time B starts following anew (the previous
// one left and the linger ended, which unfollows); and once the linger is
// over B gets none of the conversation's live messages.
func TestClusterFollowMidTurn(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		_, bb, ca, _, id := b.followPair(t, "midturn", 50*time.Millisecond)
		send(ca, id, "middle please")
		for round := range 3 {
			for range 20 {
				ca.WaitFor("copilot:delta", nil)
			}
			join := bb.srv.Dial(t)
			var got []relaytest.Frame
			if round == 1 {
				// No copy: subscribed says where live events start.
				subscribe(join, id)
				sub := join.WaitFor("copilot:subscribed", nil)
				got = collectN(join, 15)
				eventSeqs(t, fmt.Sprintf("joiner %d", round), got, sub.Seq())
			} else {
				replayFrom(join, id, 0)
				got = collect(t, join, "copilot:subscribed", nil)
				got = append(got, collectN(join, 15)...)
				eventSeqs(t, fmt.Sprintf("joiner %d", round), got, 0)
			}
			if st := bb.stats(); st.Followed != 1 {
				t.Fatalf("joiner %d: B follows %d conversations", round, st.Followed)
			}
			join.Close()
			waitFollowed(t, bb, 0) // the linger's end unsubscribes
		}
		ca.WaitFor("copilot:idle", nil)
		before := bb.stats().LiveMessages
		if before == 0 {
			t.Fatal("B's joiners got live events, but B counted no live message")
		}
		send(ca, id, "hello")
		ca.WaitFor("copilot:idle", nil)
		time.Sleep(200 * time.Millisecond) // what would come, comes in that time
		if after := bb.stats().LiveMessages; after != before {
			t.Fatalf("B followed nothing, and got %d live messages of a turn", after-before)
		}

		// A last joiner replays all of it, gapless, every delta once.
		last := bb.srv.Dial(t)
		replayFrom(last, id, 0)
		all := collect(t, last, "copilot:subscribed", nil)
		eventSeqs(t, "last", all, 0)
		if n := countType(all, "copilot:delta"); n != 401 {
			t.Fatalf("the replay has %d deltas, want 401", n)
		}
	})
}

// collectN reads the next n frames.
func collectN(cl *relaytest.Client, n int) []relaytest.Frame {
	out := make([]relaytest.Frame, 0, n)
	for range n {
		out = append(out, cl.Next())
	}
	return out
}

// Changes B missed (made behind every relay's back: a store that
// publishes none) are in B's list once its connection comes back: a new
// conversation listed, a deleted one dropped.
func TestClusterListRepair(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		a, bb, ca, cb, id := b.followPair(t, "repair", time.Second)
		send(ca, id, "hello")
		ca.WaitFor("copilot:idle", nil)
		cb.Send("copilot:list", map[string]any{"watch": true})
		if l := cb.WaitFor("copilot:conversations", nil); !strings.Contains(string(l.Raw), id) {
			listedAs(t, cb, id)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.store.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		// A conversation written by a store of no cluster: nobody is told.
		quiet := b.quietStore(t, 2)
		unseen := id + "-unseen"
		now := time.Now()
		frame := []byte(`{"type":"copilot:idle","conversationId":"` + unseen + `","seq":1,"data":{"status":"completed"}}`)
		if err := quiet.Write(ctx, history.Batch{
			Events:        []history.Event{{ConversationID: unseen, Seq: 1, Type: "copilot:idle", Frame: frame}},
			Conversations: []history.Conversation{{ID: unseen, Title: "behind your back", Mode: "act", CreatedAt: now, UpdatedAt: now, LastSeq: 1}},
		}); err != nil {
			t.Fatal(err)
		}
		// Nobody told B (a late change of the first one may still come).
		for {
			f, ok := cb.TryNext(300 * time.Millisecond)
			if !ok {
				break
			}
			if s := string(f.Raw); strings.Contains(s, unseen) || strings.Contains(s, `"deleted":true`) {
				t.Fatalf("B heard of a change nobody told: %s", s)
			}
		}

		bb.reconnect(t)
		// Both in one notice of the list, in either order.
		var listed, dropped bool
		for !listed || !dropped {
			f := cb.WaitFor("copilot:conversation", nil)
			s := string(f.Raw)
			listed = listed || strings.Contains(s, `"conversationId":"`+unseen+`"`) && strings.Contains(s, `"title":"behind your back"`)
			dropped = dropped || strings.Contains(s, `"conversationId":"`+id+`"`) && strings.Contains(s, `"deleted":true`)
		}
	})
}

// During a rolling upgrade a relay of the older kind (its lease a bare
// time: it publishes no record changes) makes the others follow every
// live subject, until its lease goes.
func TestClusterFollowOlderRelay(t *testing.T) {
	parallel(t)
	b := embeddedBackend(t)
	_, bb, ca, _, id := b.followPair(t, "older", time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := natsjs.New(bb.nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "pd_relays")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "olderrelay", []byte(time.Now().UTC().Format(time.RFC3339))); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(wait)
	for !bb.stats().Wide {
		if time.Now().After(deadline) {
			t.Fatal("B does not follow every conversation while an older relay lives")
		}
		time.Sleep(5 * time.Millisecond)
	}
	send(ca, id, "hello")
	ca.WaitFor("copilot:idle", nil)
	for bb.stats().LiveMessages == 0 {
		if time.Now().After(deadline) {
			t.Fatal("B, following every conversation, got no live message")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := kv.Delete(ctx, "olderrelay"); err != nil {
		t.Fatal(err)
	}
	for bb.stats().Wide {
		if time.Now().After(deadline) {
			t.Fatal("B still follows every conversation once the older relay is gone")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
