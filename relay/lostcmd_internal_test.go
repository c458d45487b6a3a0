package relay

import (
	"context"
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestClusterCommandsOnLostConversation: set_mode, abort and
// user_input_response routed here as to the owner reach the conversation
// after it was lost to another relay. Like a send (TestClusterSendOnLostConversation)
// each must be refused with error limit, to be sent again (then to the new
// owner), not answered as done while nothing happened: the mode set here
// decides nothing, the turn and the question live on the other relay.
func TestClusterCommandsOnLostConversation(t *testing.T) {
	r, conv := lostConversation(t, &openCounter{})
	conv.mu.Lock()
	before := conv.mode
	conv.mu.Unlock()
	other := protocol.ModePlan
	if before == protocol.ModePlan {
		other = protocol.ModeAct
	}

	check := func(what, typ string, e *protocol.Error) {
		t.Helper()
		if e == nil || e.Code != protocol.CodeLimit || e.Type != typ || e.ConversationID != "lost" {
			t.Errorf("%s on a conversation another relay owns: %+v, want error %s for %s", what, e, protocol.CodeLimit, typ)
		}
	}
	check("set_mode", protocol.TypeSetMode, r.setModeBy(context.Background(), &protocol.SetMode{ConversationID: "lost", Mode: other}, nil))
	conv.mu.Lock()
	after := conv.mode
	conv.mu.Unlock()
	if after != before {
		t.Errorf("set_mode changed the mode of a conversation another relay owns, to %q", after)
	}
	check("abort", protocol.TypeAbort, r.abortConversation(&protocol.Abort{ConversationID: "lost"}))
	check("user_input_response", protocol.TypeUserInputResponse,
		r.answer(&protocol.UserInputResponse{ConversationID: "lost", RequestID: "q1", Answer: "yes"}, nil))
}
