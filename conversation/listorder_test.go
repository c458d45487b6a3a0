package conversation

import (
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestOpeningKeepsLastActivity: a conversation's turns replayed when it
// is opened leave its last activity as the relay's list says (opening
// one must not move it to the top of the list); a turn that starts live
// is activity.
func TestOpeningKeepsLastActivity(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	st := New("c", Options{Now: func() time.Time { return now }})
	listed := now.Add(-48 * time.Hour)
	st.Listed(protocol.ConversationInfo{ConversationID: "c", Title: "old", UpdatedAt: listed.Format(time.RFC3339), Mode: protocol.ModeAct})
	hdr := func(seq int64) protocol.Header { return protocol.Header{ConversationID: "c", Seq: seq} }
	st.Apply(ev(protocol.TypeUserMessage, &protocol.UserMessage{Header: hdr(1), MessageID: "u1", Content: "hello"}))
	st.Apply(ev(protocol.TypeIdle, &protocol.Idle{Header: hdr(2), Status: protocol.StatusCompleted}))
	st.Apply(ev(protocol.TypeSubscribed, &protocol.Subscribed{ConversationID: "c", Mode: protocol.ModeAct}))
	if !st.UpdatedAt.Equal(listed) {
		t.Fatalf("after the replay the last activity is %v, want the list's %v", st.UpdatedAt, listed)
	}
	st.Apply(ev(protocol.TypeUserMessage, &protocol.UserMessage{Header: hdr(3), MessageID: "u2", Content: "again"}))
	if !st.UpdatedAt.Equal(now) {
		t.Fatalf("a live turn left the last activity at %v", st.UpdatedAt)
	}
}
