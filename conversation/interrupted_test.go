package conversation_test

import (
	"testing"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
)

// TestTurnTheRelayCutIsInterrupted: the end of a turn the relay cut (its
// own stop, a crash closed at its restart, a lost relay of the cluster)
// reads "Interrupted: the relay restarted" in the window and the terminal,
// as on the page, where they said "Stopped. The agent's response so far is
// kept above." as for a user's Stop, with "relay restarted" under it (seen
// in a walk: the app quit during a turn and started again); a user's Stop
// still says Stopped.
func TestTurnTheRelayCutIsInterrupted(t *testing.T) {
	if relay.RestartedMessage != conversation.RestartedMessage {
		t.Fatalf("the relay's message %q is not the one the front ends read, %q", relay.RestartedMessage, conversation.RestartedMessage)
	}
	for _, tc := range []struct {
		name         string
		idle         protocol.Idle
		text, detail string
	}{
		{"the relay's stop", protocol.Idle{Status: protocol.StatusAborted, Message: relay.RestartedMessage}, conversation.InterruptedText, ""},
		{"a crash closed at restart", protocol.Idle{Status: protocol.StatusError, Message: relay.RestartedMessage}, conversation.InterruptedText, ""},
		{"a lost relay", protocol.Idle{Status: protocol.StatusError, Message: "relay lost: relay r2 stopped while the turn ran"}, conversation.InterruptedText, "relay lost: relay r2 stopped while the turn ran"},
		{"a user's Stop", protocol.Idle{Status: protocol.StatusAborted}, conversation.StatusText(protocol.StatusAborted), ""},
	} {
		st := conversation.New("c", conversation.Options{})
		hdr := protocol.Header{ConversationID: "c", Seq: 1}
		st.Apply(client.Event{Data: &protocol.UserMessage{Header: hdr, MessageID: "u", Content: "slow", Mode: protocol.ModeAct}})
		st.Apply(client.Event{Data: &protocol.Delta{Header: hdr, MessageID: "m", Content: "1… 2…"}})
		idle := tc.idle
		idle.Header = hdr
		st.Apply(client.Event{Data: &idle})
		last := st.Rows[len(st.Rows)-1]
		if last.Kind != conversation.RowStatus || last.Text != tc.text || last.Detail != tc.detail {
			t.Errorf("%s: the turn ends %q (%q), want %q (%q)", tc.name, last.Text, last.Detail, tc.text, tc.detail)
		}
	}
}
