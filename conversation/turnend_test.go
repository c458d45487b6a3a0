package conversation

import (
	"fmt"
	"testing"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestTurnEndClosesWhatEarlierTurnsLeftOpen: a turn's end stops every
// tool row still running and ends every message still streaming, also
// those an earlier turn left open (its end never came), and none of a
// history the relay replaced (client.Reset).
func TestTurnEndClosesWhatEarlierTurnsLeftOpen(t *testing.T) {
	st := New("c", Options{})
	hdr := protocol.Header{ConversationID: "c", Seq: 1}
	apply := func(d any) Update { return st.Apply(client.Event{Data: d}) }
	apply(&protocol.UserMessage{Header: hdr, MessageID: "u0", Content: "lost", Mode: protocol.ModeAct})
	apply(&protocol.Delta{Header: hdr, MessageID: "m0", Content: "half"})
	for i := range 10 { // more rows than the history replayed after the reset
		apply(&protocol.ToolStart{Header: hdr, ToolCallID: fmt.Sprintf("gone%d", i), ToolName: "bash"})
	}
	if u := apply(&client.Reset{ConversationID: "c"}); !u.Rebuilt {
		t.Fatal("the reset rebuilt nothing")
	}
	apply(&protocol.UserMessage{Header: hdr, MessageID: "u1", Content: "first", Mode: protocol.ModeAct})
	apply(&protocol.ToolStart{Header: hdr, ToolCallID: "t1", ToolName: "bash"})
	apply(&protocol.Delta{Header: hdr, MessageID: "m1", Content: "one"})
	// The first turn's end never came.
	apply(&protocol.UserMessage{Header: hdr, MessageID: "u2", Content: "second", Mode: protocol.ModeAct})
	apply(&protocol.ToolStart{Header: hdr, ToolCallID: "t2", ToolName: "bash"})
	apply(&protocol.ToolStart{Header: hdr, ToolCallID: "t3", ToolName: "bash"})
	apply(&protocol.ToolEnd{Header: hdr, ToolCallID: "t3", Success: true})
	apply(&protocol.Delta{Header: hdr, MessageID: "m2", Content: "two"})
	u := apply(&protocol.Idle{Header: hdr, Status: protocol.StatusAborted})
	if got, want := kindsOf(st.Rows), "user,tool,text,user,tool,tool,text,status"; got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	for i, want := range map[int]string{1: ToolStopped, 4: ToolStopped, 5: ToolApproved} {
		if r := st.Rows[i]; r.State != want || !r.Done {
			t.Errorf("row %d (%s): state %q done %v, want %q done", i, r.MessageID, r.State, r.Done, want)
		}
	}
	for _, i := range []int{2, 6} {
		if !st.Rows[i].Done {
			t.Errorf("row %d (%s) still streams after the turn's end", i, st.Rows[i].Text)
		}
	}
	if fmt.Sprint(u.Rows) != "[1 4 6 7]" { // m1's row ended with its turn's prompt
		t.Errorf("the end's update names rows %v, want [1 4 6 7]", u.Rows)
	}
	// Nothing is left to close: another end changes only its own row.
	if u := apply(&protocol.Idle{Header: hdr, Status: protocol.StatusCompleted}); fmt.Sprint(u.Rows) != "[8]" {
		t.Errorf("a second end's update names rows %v, want [8]", u.Rows)
	}
}

// BenchmarkFoldLongHistory folds the replay of a stored conversation of
// 2,500 turns (5,000 messages), each a prompt, a reply of three blocks
// streamed in five deltas around a tool call, the whole message and the
// turn's end: the window folds this when such a conversation is opened.
// Before the turn's end closed only what was open, it walked every row
// and message so far, and this took five to seven times as long.
func BenchmarkFoldLongHistory(b *testing.B) {
	var evs []client.Event
	seq := int64(0)
	hdr := func() protocol.Header { seq++; return protocol.Header{ConversationID: "c", Seq: seq} }
	add := func(d any) { evs = append(evs, client.Event{Data: d}) }
	for i := range 2500 {
		msg := fmt.Sprintf("m%d", i)
		tool := fmt.Sprintf("t%d", i)
		add(&protocol.UserMessage{Header: hdr(), MessageID: fmt.Sprintf("u%d", i), Content: fmt.Sprintf("step %d of the plan", i), Mode: protocol.ModeAct})
		add(&protocol.Delta{Header: hdr(), MessageID: msg, Content: "Here is what I would change.\n\n"})
		add(&protocol.Delta{Header: hdr(), MessageID: msg, Content: "1. Split the parser.\n2. Measure each block once.\n\n"})
		add(&protocol.ToolStart{Header: hdr(), ToolCallID: tool, ToolName: "bash", Arguments: []byte(`{"command":"go test ./conversation/"}`)})
		add(&protocol.ToolEnd{Header: hdr(), ToolCallID: tool, Success: true, Result: "ok"})
		add(&protocol.Delta{Header: hdr(), MessageID: msg, Content: "The loop:\n\n```go\nfor _, b := range blocks {\n}\n```\n\n"})
		add(&protocol.Delta{Header: hdr(), MessageID: msg, Content: "With that, a long reply costs the same per token."})
		add(&protocol.Message{Header: hdr(), MessageID: msg, Content: "Here is what I would change.\n\n1. Split the parser.\n2. Measure each block once.\n\nThe loop:\n\n```go\nfor _, b := range blocks {\n}\n```\n\nWith that, a long reply costs the same per token."})
		add(&protocol.Idle{Header: hdr(), Status: protocol.StatusCompleted})
	}
	b.ReportAllocs()
	for b.Loop() {
		st := New("c", Options{})
		for _, ev := range evs {
			st.Apply(ev)
		}
		st.Apply(client.Event{Data: &protocol.Subscribed{ConversationID: "c", Mode: protocol.ModeAct}})
	}
}
