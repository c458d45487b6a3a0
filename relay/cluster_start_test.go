package relay_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/history/memcluster"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// A relay that joins a cluster lists the conversations the others stored
// from its start (loadShared), not only once its first repair of the list
// (repairList, which the join's Reconnected starts) has listed the store
// again: here every listing after the start's waits until the test is
// done, and the list a client asks for at once shows the conversation
// another relay stored, with its title.
func TestClusterJoiningRelayListsWhatIsStored(t *testing.T) {
	parallel(t)
	b := memoryBackend(t)
	s := clusterScript(t)
	// No relay is lost here: a busy machine that stalls one past the
	// test lease must not end A's turn.
	opts := jetstream.ClusterOptions{Lease: shareLease}
	a := b.relayWith(t, 0, s, opts)
	ca := a.srv.Dial(t)
	const id = "stored-before-the-join"
	send(ca, id, "hello there")
	wantIdle(t, ca, "A", "completed")

	held := &heldListings{release: make(chan struct{})}
	bb := b.relayMod(t, 1, script.New(s), opts, func(cfg *relay.Config) {
		held.Store = cfg.Store.(*memcluster.Store)
		cfg.Store = held
	})
	t.Cleanup(held.open) // runs before the relay stops: its repair ends
	cb := bb.srv.Dial(t)
	cb.Send("copilot:list", nil)
	list := cb.WaitFor("copilot:conversations", nil)
	if !strings.Contains(string(list.Raw), `"conversationId":"`+id+`"`) || !strings.Contains(string(list.Raw), `"title":"hello there"`) {
		t.Fatalf("the joining relay's list before any repair: %s", list.Raw)
	}
	if n := held.listings.Load(); n < 1 {
		t.Fatalf("the store was listed %d times: the relay's start did not list it", n)
	}
}

// heldListings is a relay's store whose listings of the conversations
// after the first (the relay's start) wait until open.
type heldListings struct {
	*memcluster.Store
	listings atomic.Int32
	release  chan struct{}
	once     sync.Once
}

func (s *heldListings) Conversations(ctx context.Context) ([]history.Conversation, error) {
	if s.listings.Add(1) > 1 {
		select {
		case <-s.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Store.Conversations(ctx)
}

func (s *heldListings) open() { s.once.Do(func() { close(s.release) }) }
