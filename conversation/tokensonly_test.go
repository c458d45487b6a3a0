package conversation

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestTokensOnlyUsage: an agent that reports tokens alone (opencode over
// ACP with your own model: no model name, no cache figures, no quota) has
// its usage shown, not "No usage reported yet".
func TestTokensOnlyUsage(t *testing.T) {
	st := New("c", Options{})
	in, out := int64(8508), int64(14)
	st.Apply(client.Event{Type: protocol.TypeQuota, Data: &protocol.Quota{
		Header: protocol.Header{ConversationID: "c", Seq: 1}, QuotaSnapshots: json.RawMessage(`{}`), InputTokens: &in, OutputTokens: &out,
	}})
	if st.Usage.Empty() {
		t.Fatal("a report of tokens alone counts as nothing reported")
	}
	want := "this turn 8508 in / 14 out tokens  ·  conversation 8508 in / 14 out tokens"
	if got := UsageText(st.Usage, st.Turn, time.Now()); got != want {
		t.Errorf("usage bar %q, want %q", got, want)
	}
}
