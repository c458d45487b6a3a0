package relay_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// What the store holds that the relays did not see: a conversation
// deleted behind their backs, an append whose ack was lost.

// A conversation deleted without the relays being told (here: straight
// from the store, as when a relay misses the notice while its connection
// is down) is forgotten by the next subscribe: the subscriber finds a new,
// empty conversation, and the watched list drops the old one.
func TestClusterDeletedUnseen(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		a, bb, ca, cb, id := b.pair(t, "unseen")

		send(ca, id, "hello")
		ca.WaitFor("copilot:idle", nil)
		cb.Send("copilot:list", map[string]any{"watch": true})
		if l := cb.WaitFor("copilot:conversations", nil); !strings.Contains(string(l.Raw), id) {
			// The list may lag A's last event by a moment.
			cb.WaitFor("copilot:conversation", func(f relaytest.Frame) bool { return strings.Contains(string(f.Raw), id) })
		}

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.store.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		late := bb.srv.Dial(t)
		replayFrom(late, id, 0)
		if sub := late.WaitFor("copilot:subscribed", nil); sub.Seq() != 0 {
			t.Fatalf("subscribed to a deleted conversation: %s", sub.Raw)
		}
		gone := cb.WaitFor("copilot:conversation", func(f relaytest.Frame) bool {
			return strings.Contains(string(f.Raw), id) && strings.Contains(string(f.Raw), `"deleted":true`)
		})
		t.Logf("the watched list: %s", gone.Raw)
	})
}

// An append of relay A's is stored, but its ack is lost (as when the
// cluster loses its quorum with the append stored): the Write fails with
// the outcome unsure, and B's client may already have the events the stream
// republished. Nothing is deleted and no seq is handed out again: A takes
// the stream's history (its own client gets the stored events, gapless),
// takes the conversation back (no other relay owns it) and closes the turn
// with an idle saying the history store could not be reached, not "relay
// lost"; every client and the stored chain agree, seq by seq, and the
// next send runs. Before, A deleted the stored append ("took back") after
// B's client had its events, and stored other events under their seqs.
func TestClusterUnsureAppendKept(t *testing.T) {
	parallel(t)
	checkNoLeaks(t)
	b := embeddedBackend(t)
	s := clusterScript(t)
	const id = "unsure-append"
	var arm atomic.Bool
	ba := b
	ba.loseAck = func(conv string) bool { return conv == id && arm.CompareAndSwap(true, false) }
	a := ba.relay(t, 0, s)
	bb := b.relay(t, 1, s)
	ca, cb := a.srv.Dial(t), bb.srv.Dial(t)

	send(ca, id, "long")
	ca.WaitFor("copilot:delta", func(f relaytest.Frame) bool { return f.Field("content") == "l2 " })
	replayFrom(cb, id, 0)
	cb.WaitFor("copilot:subscribed", nil)
	arm.Store(true)

	idleA := ca.WaitFor("copilot:idle", nil)
	idleB := cb.WaitFor("copilot:idle", nil)
	for who, idle := range map[string]relaytest.Frame{"A's client": idleA, "B's client": idleB} {
		if idle.Field("status") != "error" || strings.HasPrefix(fmt.Sprint(idle.Field("message")), "relay lost") || idle.Seq() != idleA.Seq() {
			t.Fatalf("%s got %s (A's %s)", who, idle.Raw, idleA.Raw)
		}
	}
	a.logs.waitLog(t, "was stored after all")

	// The stored chain: gapless, one idle, last.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stored := map[int64]string{}
	var types []string
	if err := bb.store.Events(ctx, id, 0, func(e history.Event) error {
		if e.Seq != int64(len(types)+1) {
			t.Fatalf("stored seq %d after %d", e.Seq, len(types))
		}
		stored[e.Seq] = string(e.Frame)
		types = append(types, e.Type)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if types[len(types)-1] != "copilot:idle" || countIn(types, "copilot:idle") != 1 || int64(len(types)) != idleA.Seq() {
		t.Fatalf("stored %v, the idle at %d", types, idleA.Seq())
	}
	// A third client replays from A: every stored event, the same bytes.
	cc := a.srv.Dial(t)
	replayFrom(cc, id, 0)
	got := collect(t, cc, "copilot:subscribed", nil)
	seqs := eventSeqs(t, "the replay from A", got, 0)
	if int64(len(seqs)) != idleA.Seq() {
		t.Fatalf("the replay from A gave seqs %v, want 1…%d", seqs, idleA.Seq())
	}
	for _, f := range got {
		if s := f.Seq(); s > 0 && f.Type != "copilot:subscribed" && stored[s] != string(f.Raw) {
			t.Fatalf("seq %d replays as %s, stored as %s", s, f.Raw, stored[s])
		}
	}
	// The next send runs, after the stored seqs.
	send(cb, id, "hello")
	next := wantIdle(t, cb, "B's client", "completed")
	if next.Seq() <= idleA.Seq() {
		t.Fatalf("the next turn's idle at seq %d, not after %d", next.Seq(), idleA.Seq())
	}
}
