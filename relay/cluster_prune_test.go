package relay_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// --history-max-age on several relays: a relay prunes what it owns and
// what no live relay owns (claimed first), never another live relay's
// conversation, and the other relays hear of every delete: their
// subscribers get copilot:deleted and their watched lists drop it.
func TestClusterPruneIdle(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		s := clusterScript(t)
		a, bb, gone := b.relay(t, 0, s), b.relay(t, 1, s), b.relay(t, 2, s)
		ca, cb, cg := a.srv.Dial(t), bb.srv.Dial(t), gone.srv.Dial(t)
		orphan, owned := "orphan-"+b.name, "owned-"+b.name

		// orphan's relay stops: nobody owns it. A owns owned.
		cg.Send("copilot:send", map[string]any{"conversationId": orphan, "prompt": "hello"})
		cg.WaitFor("copilot:idle", nil)
		gone.srv.Close()
		ca.Send("copilot:send", map[string]any{"conversationId": owned, "prompt": "hello"})
		ca.WaitFor("copilot:idle", nil)

		// A's client follows orphan and watches the list; so does B's, for owned.
		ca.Send("copilot:subscribe", map[string]any{"conversationId": orphan, "sinceSeq": 0})
		if sub := ca.WaitFor("copilot:subscribed", nil); sub.Seq() == 0 {
			t.Fatalf("A's subscriber found nothing of %s: %s", orphan, sub.Raw)
		}
		ca.Send("copilot:list", map[string]any{"watch": true})
		ca.WaitFor("copilot:conversations", nil)
		cb.Send("copilot:subscribe", map[string]any{"conversationId": owned, "sinceSeq": 0})
		if sub := cb.WaitFor("copilot:subscribed", nil); sub.Seq() == 0 {
			t.Fatalf("B's subscriber found nothing of %s: %s", owned, sub.Raw)
		}
		cb.Send("copilot:list", map[string]any{"watch": true})
		cb.WaitFor("copilot:conversations", nil)

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Both are older; a claim must not make the orphan look new.
		cutoff := time.Now()
		if n := bb.srv.Relay.PruneIdle(ctx, cutoff); n != 1 {
			t.Fatalf("B pruned %d conversations, want 1 (%s, whose relay is gone; %s is A's)", n, orphan, owned)
		}
		deletedIn := func(cl *relaytest.Client, id string) {
			t.Helper()
			cl.WaitFor("copilot:deleted", func(f relaytest.Frame) bool { return f.Field("conversationId") == id })
			cl.WaitFor("copilot:conversation", func(f relaytest.Frame) bool {
				return strings.Contains(string(f.Raw), id) && strings.Contains(string(f.Raw), `"deleted":true`)
			})
		}
		deletedIn(ca, orphan)
		if _, err := a.store.Conversation(ctx, orphan); err != history.ErrNotFound {
			t.Fatalf("%s is still stored: %v", orphan, err)
		}
		if _, err := bb.store.Conversation(ctx, owned); err != nil {
			t.Fatalf("B's pruning dropped A's %s: %v", owned, err)
		}

		// A prunes its own; B's subscriber and list hear of it.
		if n := a.srv.Relay.PruneIdle(ctx, cutoff); n != 1 {
			t.Fatalf("A pruned %d conversations, want 1 (%s)", n, owned)
		}
		deletedIn(cb, owned)
		ca.Send("copilot:list", nil)
		if l := ca.WaitFor("copilot:conversations", nil); strings.Contains(string(l.Raw), orphan) || strings.Contains(string(l.Raw), owned) {
			t.Fatalf("A still lists a pruned conversation: %s", l.Raw)
		}
	})
}
