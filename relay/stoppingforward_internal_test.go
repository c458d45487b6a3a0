package relay

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// TestClusterForwardedSendWhileStopping: a relay that is shutting down
// still answers the commands forwarded to it until its cluster stops (the
// last step of Close). A send it gets then starts no turn (track refuses
// it); the answer must say so, or the client on the other relay hears
// nothing of a send that vanished.
func TestClusterForwardedSendWhileStopping(t *testing.T) {
	agent := &openCounter{}
	r, err := New(Config{Agent: agent, Store: history.NewMemory(), Cluster: soloCluster{}})
	if err != nil {
		t.Fatal(err)
	}
	// Owned here, as after a claim.
	_ = r.withConversation(context.Background(), "mine", func(c *conversation) { c.own.here = true })
	// Close's first steps: nothing new starts, every turn's context ends.
	r.lifeMu.Lock()
	r.closed = true
	r.lifeMu.Unlock()
	r.cancel(errShutdown)

	frame, err := protocol.Encode(protocol.TypeSend, &protocol.Send{ConversationID: "mine", Prompt: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(forwarded{Frame: frame, By: &protocol.By{Device: "phone", Client: "web"}})
	var rep forwardReply
	if err := json.Unmarshal(r.runForwarded(context.Background(), body), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Error != nil && rep.Error.Code == protocol.CodeMissingField {
		t.Fatalf("the forwarded send was refused for its shape (%s), not for the stopping relay", rep.Error.Message)
	}
	if rep.Error == nil && !rep.NotOwner {
		t.Errorf("a send forwarded to a stopping relay was answered as run (%+v), and runs nowhere", rep)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.lifeMu.Lock()
	r.closed = false // let Close run its course
	r.lifeMu.Unlock()
	_ = r.Close(ctx)
	if n := agent.opens.Load(); n != 0 {
		t.Errorf("the agent was asked for %d sessions by a stopping relay", n)
	}
}

// TestForwardedCommandWithoutSender: a forwarded command names the device
// and client that sent it ("by"); one without (a relay of another version,
// a bad peer) is refused with missing_field, not run: the owner would take
// a nil sender for a turn's user message, and panicked doing so.
func TestForwardedCommandWithoutSender(t *testing.T) {
	r, err := New(Config{Agent: &openCounter{}, Store: history.NewMemory(), Cluster: soloCluster{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Close(ctx)
	})
	_ = r.withConversation(context.Background(), "mine", func(c *conversation) { c.own.here = true })
	for _, tc := range []struct {
		typ  string
		data any
	}{
		{protocol.TypeSend, &protocol.Send{ConversationID: "mine", Prompt: "hi"}},
		{protocol.TypeSetMode, &protocol.SetMode{ConversationID: "mine", Mode: protocol.ModePlan}},
	} {
		frame, err := protocol.Encode(tc.typ, tc.data)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(forwarded{Frame: frame})
		var rep forwardReply
		if err := json.Unmarshal(r.runForwarded(context.Background(), body), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Error == nil || rep.Error.Code != protocol.CodeMissingField {
			t.Errorf("a forwarded %s without its sender was answered %+v, want missing_field", tc.typ, rep)
		}
	}
}
