package store

import (
	"testing"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestReplayShownAsListed: the history of a conversation the window
// subscribed to is folded as it arrives, but until its replay ends the
// window and the list show the conversation as its list entry says (idle,
// its mode, no question, no usage), not the turns and questions of the
// history as they pass; then as it is.
func TestReplayShownAsListed(t *testing.T) {
	f := newFeed(t, Options{})
	f.s.Apply(client.Event{Type: protocol.TypeConversations, Data: &protocol.Conversations{Conversations: []protocol.ConversationInfo{
		{ConversationID: "c", Title: "Old work", Mode: protocol.ModePlan, Agent: "copilot"},
	}}})
	f.s.Replaying("c")
	f.ev("c", &protocol.UserMessage{MessageID: "u1", Content: "first", Mode: protocol.ModeAct, Agent: "demo"})
	f.ev("c", &protocol.UserInputRequest{RequestID: "r1", Question: "Which?"})
	cost := 1.0
	f.ev("c", &protocol.Quota{Model: "gpt-5", Cost: &cost})
	fr := f.s.Take("c", false)
	v := fr.Conv
	if v.Streaming || v.Thinking || v.Pending != nil || v.Mode != protocol.ModePlan || v.Agent != "copilot" || !v.Usage.Empty() || v.Full || len(v.Rows) != 0 {
		t.Fatalf("during the replay the view shows %+v, want the list entry's (idle, plan, copilot, no question, no usage, no rows)", v)
	}
	if side := fr.Sidebar; len(side) != 1 || side[0].Streaming || side[0].Waiting || side[0].Mode != protocol.ModePlan {
		t.Fatalf("during the replay the list shows %+v", side)
	}
	// A full take (a switch to it) still has every row folded so far.
	if v := f.s.Take("c", true).Conv; !v.Full || kinds(v.Rows) != "user" || v.Streaming {
		t.Fatalf("a full take during the replay: %+v", v)
	}
	f.ev("c", &protocol.Idle{Status: protocol.StatusCompleted})
	f.ev("c", &protocol.UserMessage{MessageID: "u2", Content: "second", Mode: protocol.ModeAct, Agent: "demo"})
	f.s.Apply(client.Event{Type: protocol.TypeSubscribed, Data: &protocol.Subscribed{ConversationID: "c", Mode: protocol.ModeAct, Streaming: true, Seq: f.seq["c"]}})
	fr = f.s.Take("c", true)
	v = fr.Conv
	if !v.Streaming || !v.Thinking || v.Mode != protocol.ModeAct || v.Agent != "demo" || v.Usage.Empty() || !v.Full || kinds(v.Rows) != "user,status,user" {
		t.Fatalf("after the replay the view shows %+v, want the turn streaming in act on demo, with its usage and rows user,status,user", v)
	}
	if len(fr.Sidebar) != 1 || !fr.Sidebar[0].Streaming {
		t.Fatalf("after the replay the list shows %+v", fr.Sidebar)
	}
}
