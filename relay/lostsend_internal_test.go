package relay

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/session"
)

// soloCluster is a cluster of one relay that owns nothing yet: enough to
// start a relay whose conversations are remote until it claims them.
type soloCluster struct{ history.Cluster }

func (soloCluster) ID() string                       { return "solo" }
func (soloCluster) Start(history.ClusterHooks) error { return nil }
func (soloCluster) Stop(context.Context) error       { return nil }
func (soloCluster) Health() string                   { return "" }

// openCounter is an agent that counts the sessions asked of it, and opens
// none.
type openCounter struct{ opens atomic.Int32 }

func (*openCounter) Name() string { return "counter" }
func (*openCounter) Close() error { return nil }
func (a *openCounter) Open(context.Context, string, session.OpenOptions, session.Host) (session.Session, error) {
	a.opens.Add(1)
	return nil, errors.New("no sessions here")
}

// TestClusterSendOnLostConversation: a send routed here as to the owner
// (forward said so) reaches startSend after the conversation was lost to
// another relay (an append fenced, or the lease lapsed, in between). It
// must not start a turn: its events would be dropped (the conversation is
// remote), the agent would run the prompt for nobody, and the client
// would hear nothing. It gets an error to send again, which then goes to
// the new owner.
func TestClusterSendOnLostConversation(t *testing.T) {
	agent := &openCounter{}
	r, _ := lostConversation(t, agent)
	e := r.startSend(context.Background(), &protocol.Send{ConversationID: "lost", Prompt: "hi"}, nil, nil)
	if e == nil {
		t.Error("a send on a conversation another relay owns started a turn here, without an error")
	}
	deadline := time.Now().Add(time.Second)
	for agent.opens.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := agent.opens.Load(); n != 0 {
		t.Errorf("the agent was asked for %d sessions of a conversation another relay owns", n)
	}
}

// lostConversation starts a relay in a cluster of its own and makes
// conversation "lost" on it, remote as after loseLocked: another relay
// owns it. The relay closes when the test ends.
func lostConversation(t *testing.T, agent *openCounter) (*Relay, *conversation) {
	t.Helper()
	r, err := New(Config{Agent: agent, Store: history.NewMemory(), Cluster: soloCluster{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Close(ctx)
	})
	var conv *conversation
	_ = r.withConversation(context.Background(), "lost", func(c *conversation) { conv = c })
	if conv.own.here {
		t.Fatal("a conversation new to a relay in a cluster is not remote")
	}
	return r, conv
}
