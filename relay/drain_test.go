package relay_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A relay that drains (SIGTERM in a deploy) interrupts nobody: /healthz
// answers 503 at once and its client is told to reconnect elsewhere
// (1012); its turn, waiting on a question, keeps running and is answered
// from the other relay; once the turn has ended the relay hands the
// conversation over and Drain returns; the next send runs on the other
// relay. No turn ends aborted. (Before, Close aborted every running turn.)
func TestClusterDrain(t *testing.T) {
	parallel(t)
	checkNoLeaks(t)
	b := memoryBackend(t)
	s := clusterScript(t)
	a, bb := b.relay(t, 0, s), b.relay(t, 1, s)
	ca, cb := a.srv.Dial(t), bb.srv.Dial(t)
	const id = "drain"

	send(ca, id, "question")
	req := ca.WaitFor("copilot:user_input_request", nil)
	replayFrom(cb, id, 0)
	cb.WaitFor("copilot:subscribed", nil)

	drained := make(chan struct{})
	go func() {
		defer close(drained)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		a.srv.Relay.Drain(ctx)
	}()
	if code, _ := ca.WaitClosed(); code != websocket.StatusServiceRestart {
		t.Fatalf("A's client was closed with %d, want 1012 (reconnect elsewhere)", code)
	}
	if code := healthz(t, a.srv); code != http.StatusServiceUnavailable {
		t.Fatalf("A's /healthz answers %d while it drains, want 503", code)
	}
	select {
	case <-drained:
		t.Fatal("Drain returned while A's turn waited on its question")
	case <-time.After(300 * time.Millisecond):
	}
	// The question, answered from B, reaches A's agent: the turn ends well.
	cb.Send("copilot:user_input_response", map[string]any{"conversationId": id, "requestId": req.Field("requestId"), "answer": "left"})
	wantIdle(t, cb, "B's client", "completed")
	select {
	case <-drained:
	case <-time.After(30 * time.Second):
		t.Fatal("Drain did not return once A's turn had ended")
	}
	// The next turn runs on B.
	send(cb, id, "hello")
	wantIdle(t, cb, "B's client", "completed")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if owner, _, err := bb.cluster.Owner(ctx, id); err != nil || owner != bb.cluster.ID() {
		t.Fatalf("owner %q (%v), want B %q", owner, err, bb.cluster.ID())
	}
}
