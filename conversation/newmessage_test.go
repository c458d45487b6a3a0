package conversation

import (
	"testing"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestNewServerMessage shows what adding a server message takes:
// copilot:conversation was added as one struct (protocol.ConversationChanged)
// and one row of protocol's table of server messages. The client decodes it
// with no code of its own for it, and it reaches the fold that both the
// window and the terminal client render, through the one case that gives it
// meaning there.
func TestNewServerMessage(t *testing.T) {
	frame := []byte(`{"type":"copilot:conversation","data":{"conversationId":"c9","title":"Fix the build","updatedAt":"2026-11-24T10:00:00Z","streaming":true,"mode":"plan"}}`)
	ev, err := client.Decode(frame)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := ev.Data.(*protocol.ConversationChanged)
	if !ok || ev.ConversationID() != "c9" || ev.Seq() != 0 || d.Title != "Fix the build" {
		t.Fatalf("decoded %T %+v (conversation %q, seq %d)", ev.Data, ev.Data, ev.ConversationID(), ev.Seq())
	}
	st := New("c9", Options{})
	u := st.Apply(ev)
	if !u.Listing || st.Title != "Fix the build" || !st.Streaming || st.Mode != protocol.ModePlan || !st.OnRelay {
		t.Fatalf("folded %+v into %+v", u, st)
	}
	// Once subscribed, the subscription's own events decide streaming and
	// mode; the list entry still renames.
	st.Apply(client.Event{Type: protocol.TypeSubscribed, Data: &protocol.Subscribed{ConversationID: "c9", Mode: protocol.ModeAct}})
	ev, _ = client.Decode([]byte(`{"type":"copilot:conversation","data":{"conversationId":"c9","title":"Renamed","streaming":true,"mode":"plan"}}`))
	st.Apply(ev)
	if st.Title != "Renamed" || st.Streaming || st.Mode != protocol.ModeAct {
		t.Fatalf("after subscribe: %q streaming %v mode %s", st.Title, st.Streaming, st.Mode)
	}
}
