package ui

import (
	"fmt"
	"math"
	"testing"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// longHistory applies turns of a prompt and a reply to the window's current
// conversation, as a relay's replay would, and returns the next seq.
func longHistory(h *harness, turns int) int64 {
	conv := h.w.current
	seq := int64(0)
	for i := 0; i < turns; i++ {
		for _, data := range []any{
			&protocol.UserMessage{MessageID: fmt.Sprint("u", i), Content: "Please do the next step of the plan.", Mode: protocol.ModeAct},
			&protocol.Delta{MessageID: fmt.Sprint("m", i), Content: historyMessage},
			&protocol.Message{MessageID: fmt.Sprint("m", i), Content: historyMessage},
			&protocol.Idle{Status: protocol.StatusCompleted},
		} {
			seq++
			hdr := protocol.Header{ConversationID: conv, Seq: seq}
			switch d := data.(type) {
			case *protocol.UserMessage:
				d.Header = hdr
			case *protocol.Delta:
				d.Header = hdr
			case *protocol.Message:
				d.Header = hdr
			case *protocol.Idle:
				d.Header = hdr
			}
			h.w.store.Apply(client.Event{Data: data})
		}
	}
	return seq
}

// TestLongHistoryHeights: more rows than bulkHeights at once go to a new
// list, which is the one in the window, knows every row, and follows the
// bottom; every height is a whole pixel, so that the list's total is the
// same however it adds them up (a fraction made Fyne lay the list out and
// repaint it at every frame, for as long as a long conversation showed).
func TestLongHistoryHeights(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	longHistory(h, 150)
	h.frame()
	tr := h.w.transcript
	if len(tr.rows) <= bulkHeights {
		t.Fatalf("%d rows: the test needs more than %d", len(tr.rows), bulkHeights)
	}
	if tr.box.Objects[0] != tr.list {
		t.Fatal("the list in the window is not the transcript's")
	}
	if n := tr.list.Length(); n != len(tr.rows) {
		t.Fatalf("the list has %d rows, the transcript %d", n, len(tr.rows))
	}
	for i, ht := range tr.heights {
		if ht <= 0 || ht != float32(math.Ceil(float64(ht))) {
			t.Fatalf("row %d's height %v is not a whole pixel", i, ht)
		}
	}
	if !tr.atBottom() {
		t.Fatal("the list does not show the newest row")
	}
}

// TestReplayDrawnOnce: while the relay replays the conversation being
// opened, its rows are not drawn as they arrive; the transcript says it
// loads, and the frame after copilot:subscribed draws the whole history.
func TestReplayDrawnOnce(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	conv := h.w.current
	h.w.subscribed[conv] = true // as switchTo does before the replay
	seq := longHistory(h, 50)
	h.frame()
	tr := h.w.transcript
	if len(tr.rows) != 0 || !tr.empty.Visible() || tr.hint.Text != "Loading the conversation…" {
		t.Fatalf("during the replay: %d rows drawn, hint %q", len(tr.rows), tr.hint.Text)
	}
	h.w.store.Apply(client.Event{Data: &protocol.Subscribed{ConversationID: conv, Mode: protocol.ModeAct, Seq: seq}})
	h.frame()
	if len(tr.rows) < 150 || tr.empty.Visible() || tr.hint.Text != emptyHint(h.w.opts.Agent) {
		t.Fatalf("after the replay: %d rows drawn, hint shown %v", len(tr.rows), tr.empty.Visible())
	}
	if !tr.atBottom() {
		t.Fatal("the list does not show the newest row")
	}
}
