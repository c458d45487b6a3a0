package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
)

// PruneIdle (--history-max-age) deletes idle conversations older than the
// cutoff as copilot:delete does, and leaves streaming and recent ones alone.
func TestPruneIdle(t *testing.T) {
	release := make(chan struct{})
	agent := &relaytest.FuncAgent{Turn: func(ctx context.Context, id string, turn session.Turn, host session.Host) error {
		if turn.Prompt == "hold" {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		host.Emit(session.Delta{MessageID: "m-" + id, Content: "ok"})
		return nil
	}}
	store := history.NewMemory()
	srv := relaytest.Start(t, relay.Config{Agent: agent, Store: store})
	cl := srv.Dial(t)
	// The busy turn runs, and its events are stored (nothing is sent before
	// it is stored), once its prompt comes back.
	cl.Send(protocol.TypeSend, protocol.Send{ConversationID: "busy", Prompt: "hold"})
	cl.WaitFor(protocol.TypeUserMessage, func(f relaytest.Frame) bool { return f.Field("conversationId") == "busy" })
	cl.Send(protocol.TypeSend, protocol.Send{ConversationID: "old", Prompt: "hi"})
	cl.WaitFor(protocol.TypeIdle, func(f relaytest.Frame) bool { return f.Field("conversationId") == "old" })

	cutoff := time.Now().Add(time.Minute) // both are older than this
	if n := srv.Relay.PruneIdle(context.Background(), cutoff); n != 1 {
		t.Fatalf("PruneIdle deleted %d conversations, want 1 (the idle one)", n)
	}
	cl.WaitFor(protocol.TypeDeleted, func(f relaytest.Frame) bool { return f.Field("conversationId") == "old" })
	if _, err := store.Conversation(context.Background(), "old"); err != history.ErrNotFound {
		t.Errorf("the store still has the pruned conversation: %v", err)
	}
	if _, err := store.Conversation(context.Background(), "busy"); err != nil {
		t.Errorf("the streaming conversation was dropped from the store: %v", err)
	}

	// A recent cutoff keeps everything.
	close(release)
	cl.WaitFor(protocol.TypeIdle, func(f relaytest.Frame) bool { return f.Field("conversationId") == "busy" })
	if n := srv.Relay.PruneIdle(context.Background(), time.Now().Add(-time.Hour)); n != 0 {
		t.Errorf("PruneIdle with a cutoff an hour ago deleted %d conversations", n)
	}
	cl.Send(protocol.TypeList, nil)
	var list protocol.Conversations
	cl.Expect(protocol.TypeConversations).Decode(t, &list)
	if len(list.Conversations) != 1 || list.Conversations[0].ConversationID != "busy" {
		t.Errorf("conversations after pruning: %+v", list.Conversations)
	}
}
