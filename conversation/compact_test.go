package conversation

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestLongReplayCompacted: at the end of a long replay the state holds its
// rows and messages in memory of its own, none shared with the events it
// folded (their pages can then go back to the system), and is otherwise
// the same: the same rows, the same messages' text, and a message still
// streaming goes on into its row.
func TestLongReplayCompacted(t *testing.T) {
	st := New("c", Options{})
	seq := int64(0)
	hdr := func() protocol.Header { seq++; return protocol.Header{ConversationID: "c", Seq: seq} }
	var prompts []*protocol.UserMessage
	apply := func(d any) { st.Apply(client.Event{Data: d}) }
	for i := 0; seq < compactAfter; i++ {
		p := &protocol.UserMessage{Header: hdr(), MessageID: fmt.Sprintf("u%d", i), Content: fmt.Sprintf("prompt %d", i), Mode: protocol.ModeAct}
		prompts = append(prompts, p)
		apply(p)
		apply(&protocol.Delta{Header: hdr(), MessageID: fmt.Sprintf("m%d", i), Content: "First.\n\n```go\nx := 1\n"})
		apply(&protocol.ToolStart{Header: hdr(), ToolCallID: fmt.Sprintf("t%d", i), ToolName: "bash", Arguments: []byte(`{"command":"ls"}`)})
		apply(&protocol.ToolEnd{Header: hdr(), ToolCallID: fmt.Sprintf("t%d", i), Success: true, Result: "a.txt"})
		apply(&protocol.Delta{Header: hdr(), MessageID: fmt.Sprintf("m%d", i), Content: "```\n\nDone."})
		apply(&protocol.Idle{Header: hdr(), Status: protocol.StatusCompleted})
	}
	// The last turn still runs.
	apply(&protocol.UserMessage{Header: hdr(), MessageID: "ulast", Content: "last", Mode: protocol.ModeAct})
	apply(&protocol.Delta{Header: hdr(), MessageID: "again", Content: "Once."})
	apply(&protocol.Message{Header: hdr(), MessageID: "again", Content: "Once."})
	apply(&protocol.Delta{Header: hdr(), MessageID: "again", Content: "Twice."}) // a message of its own, with the same id
	apply(&protocol.Delta{Header: hdr(), MessageID: "mlast", Content: "Still "})
	before := slices.Clone(st.Rows)
	text := st.MessageText("m3")

	apply(&protocol.Subscribed{ConversationID: "c", Mode: protocol.ModeAct, Streaming: true, Seq: seq})
	if !reflect.DeepEqual(st.Rows, before) {
		t.Fatal("the rows changed at the replay's end")
	}
	if got := st.MessageText("m3"); got != text {
		t.Fatalf("message m3 is %q after the replay's end, %q before", got, text)
	}
	// A finished message's rows are pieces of its markdown, not copies.
	md := st.MessageText("m3")
	start := uintptr(unsafe.Pointer(unsafe.StringData(md)))
	shared := 0
	for _, r := range st.Rows {
		if r.MessageID != "m3" || (r.Kind != RowText && r.Kind != RowCode) || r.Text == "" {
			continue
		}
		if p := uintptr(unsafe.Pointer(unsafe.StringData(r.Text))); p < start || p+uintptr(len(r.Text)) > start+uintptr(len(md)) {
			t.Errorf("m3's %v row %q is a copy, not a piece of the message's markdown", r.Kind, r.Text)
		}
		shared++
	}
	if shared != 3 {
		t.Fatalf("m3 has %d text and code rows, want 3", shared)
	}
	for i, p := range prompts {
		r := st.Rows[slices.IndexFunc(st.Rows, func(r Row) bool { return r.Kind == RowUser && r.Text == p.Content })]
		if unsafe.StringData(r.Text) == unsafe.StringData(p.Content) {
			t.Fatalf("prompt %d's row shares its text with the event folded", i)
		}
	}
	apply(&protocol.Delta{Header: hdr(), MessageID: "mlast", Content: "going."})
	if last := st.Rows[len(st.Rows)-1]; last.Text != "Still going." || last.Done {
		t.Fatalf("the streaming message's row after more deltas: %+v", last)
	}
	apply(&protocol.Idle{Header: hdr(), Status: protocol.StatusCompleted})
	if got := st.MessageText("mlast"); got != "Still going." {
		t.Fatalf("the streamed message's text: %q", got)
	}
	if got := kindsOf(st.Rows[len(st.Rows)-5:]); got != "user,text,text,text,status" {
		t.Fatalf("the last turn's rows: %s", got)
	}
	for _, r := range st.Rows {
		if !r.Done {
			t.Fatalf("a row still streams after the turn's end: %+v", r)
		}
	}
}
