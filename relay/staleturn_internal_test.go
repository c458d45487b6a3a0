package relay

import (
	"context"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// TestStaleTurnEndLeavesNewerTurn: a turn that ends after a newer one
// started on its conversation (its end was told by a takeover, as a
// take-back that did not wait for it did before 58f0bb1, and the next
// send started a turn) must leave the newer turn alone: no idle of its
// own in the middle of the newer turn's events, and the conversation
// still streaming, so that a third send is refused busy instead of
// running beside the newer turn. finishTurn set streaming false and
// emitted its idle whatever turn ran.
func TestStaleTurnEndLeavesNewerTurn(t *testing.T) {
	const id = "stale-turn"
	st := history.NewMemory()
	r, agent, release := newSlowStopRelay(t, Config{Store: st})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	by := &protocol.By{Device: "test", Client: "test"}
	running := func() {
		t.Helper()
		select {
		case <-agent.running:
		case <-ctx.Done():
			t.Fatal("the turn never streamed")
		}
	}

	if e := r.startSend(ctx, &protocol.Send{ConversationID: id, Prompt: "first"}, by, nil); e != nil {
		t.Fatalf("send: %s", e.Message)
	}
	running()
	conv := r.lookupConversation(id)
	conv.mu.Lock()
	old := conv.turn
	// What a takeover does to the turn it closes (takeOverAs): cancelled
	// and told ended (idle, status error), the conversation not streaming.
	old.cancel(errLost)
	d := protocol.Idle{Status: protocol.StatusError, Message: "closed by a takeover"}
	conv.emitLocked(protocol.TypeIdle, &d.Header, &d)
	conv.streaming = false
	conv.mu.Unlock()

	if e := r.startSend(ctx, &protocol.Send{ConversationID: id, Prompt: "second"}, by, nil); e != nil {
		t.Fatalf("the second send: %s", e.Message)
	}
	running()
	conv.mu.Lock()
	newer := conv.turn
	conv.mu.Unlock()
	if newer == old || newer == nil {
		t.Fatal("the second send started no turn of its own")
	}

	release() // the old turn ends now; the newer one runs until cancelled
	select {
	case <-old.done:
	case <-ctx.Done():
		t.Fatal("the old turn never ended")
	}
	conv.mu.Lock()
	streaming, current := conv.streaming, conv.turn
	conv.mu.Unlock()
	if !streaming || current != newer {
		t.Errorf("after the old turn's end: streaming %v, the newer turn current %v; want the newer turn streaming", streaming, current == newer)
	}
	if e := r.startSend(ctx, &protocol.Send{ConversationID: id, Prompt: "third"}, by, nil); e == nil || e.Code != protocol.CodeConversationBusy {
		t.Errorf("a third send while the newer turn runs: %+v, want conversation_busy", e)
	}
	if !r.commit.sync(ctx) {
		t.Fatal("the events were not stored")
	}
	var types []string
	if err := st.Events(ctx, id, 0, func(e history.Event) error {
		types = append(types, e.Type)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// user_message, delta, the takeover's idle; then the newer turn's.
	if len(types) < 4 || types[3] != protocol.TypeUserMessage {
		t.Fatalf("stored %v; want the newer turn's user message fourth", types)
	}
	for _, typ := range types[4:] {
		if typ == protocol.TypeIdle || typ == protocol.TypeMessage {
			t.Fatalf("stored %v; want none of the old turn's end among the newer turn's events", types)
		}
	}
	conv.abort(errAborted)
	select {
	case <-newer.done:
	case <-ctx.Done():
		t.Fatal("the newer turn never ended")
	}
}
