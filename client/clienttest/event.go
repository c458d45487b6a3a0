package clienttest

import (
	"encoding/json"
	"testing"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// Event returns data as event seq of conversation conv, in the client.Event
// the client hands on. Every conversation event embeds protocol.Header, so
// the header is set through its JSON names, as the relay's frame carries
// it, and one helper serves every event type without a case per type (a
// new type needs no edit here). data must point to a conversation event
// (protocol.Sequenced); anything else fails the test, as does a header
// that did not take.
func Event(tb testing.TB, conv string, seq int64, data any) client.Event {
	tb.Helper()
	ev, ok := data.(protocol.Sequenced)
	if !ok {
		tb.Fatalf("clienttest.Event: %T is not a conversation event (it does not embed protocol.Header)", data)
	}
	hdr := protocol.Header{ConversationID: conv, Seq: seq}
	raw, err := json.Marshal(hdr)
	if err != nil {
		tb.Fatalf("clienttest.Event: encode the header: %v", err)
	}
	if err := json.Unmarshal(raw, data); err != nil {
		tb.Fatalf("clienttest.Event: set the header of %T: %v", data, err)
	}
	if got := ev.EventHeader(); got != hdr {
		tb.Fatalf("clienttest.Event: %T has header %+v after setting %+v", data, got, hdr)
	}
	return client.Event{Data: data}
}
