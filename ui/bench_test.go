package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// benchReply is a realistic assistant message: paragraphs, a list and a
// code block, about 4 KB once repeated.
var benchReply = strings.Repeat(`The relay keeps every conversation event in order, gives it a sequence number and writes it to the store before any client sees it, so a window that reconnects asks for what it missed and shows nothing twice.

- finished blocks are parsed once
- only the tail block is parsed again
- the transcript is a virtualised list

`+"```go\nfor ev := range c.Events() {\n\tstore.Apply(ev)\n}\n```\n\n", 6)

// historyMessage is one ~600-byte assistant message of the history.
const historyMessage = "Here is what changed in this step, with enough words to wrap over a couple of lines at the usual window width so that heights are not trivial.\n\n" +
	"1. The parser splits blocks at blank lines outside code fences.\n2. Each finished block becomes one row.\n3. Rows are measured once.\n\n" +
	"`inline code` and a [link](https://example.com) and **bold** text, then a closing sentence that is long enough to wrap once more in the window."

// BenchmarkStreamBatch measures applying one frame's batch of deltas (four
// tokens) to the model and drawing it, with 50, 200 and 800 messages in the
// history. Target: under 2 ms per batch, flat across lengths.
//
//	go test ./ui -run '^$' -bench StreamBatch -benchtime 2000x
func BenchmarkStreamBatch(b *testing.B) {
	for _, n := range []int{50, 200, 800} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			h := newHarness(b, harnessConfig{})
			conv := h.w.current
			// n messages of history: n/2 turns of a prompt and a reply.
			apply := applyFrom(h, conv, longHistory(h, n/2))
			h.frame()

			// Tokens of about four characters, four per frame.
			var tokens []string
			for i := 0; i < len(benchReply); i += 4 {
				tokens = append(tokens, benchReply[i:min(i+4, len(benchReply))])
			}
			msg, next := 0, 0
			start := func() {
				msg++
				apply(&protocol.UserMessage{MessageID: fmt.Sprint("bu", msg), Content: "Stream a long answer.", Mode: protocol.ModeAct})
				next = 0
				h.frame()
			}
			start()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if next+4 > len(tokens) {
					b.StopTimer()
					apply(&protocol.Message{MessageID: fmt.Sprint("bm", msg), Content: benchReply})
					apply(&protocol.Idle{Status: protocol.StatusCompleted})
					start()
					b.StartTimer()
				}
				for k := 0; k < 4; k++ {
					apply(&protocol.Delta{MessageID: fmt.Sprint("bm", msg), Content: tokens[next]})
					next++
				}
				h.frame()
			}
			b.StopTimer()
			b.ReportMetric(float64(len(h.w.transcript.rows)), "rows")
			// The conversation holds every message's rows; the transcript
			// holds its last windowRows of them (more while a reply streams
			// at the bottom), or all when there are fewer.
			if total := len(h.w.store.Transcript(conv)); total < n {
				b.Fatalf("the conversation has %d rows for %d messages", total, n)
			} else if got := len(h.w.transcript.rows); got < min(total, windowRows) {
				b.Fatalf("the window holds %d of the conversation's %d rows (it holds its last %d)", got, total, windowRows)
			}
		})
	}
}

// TestStreamingUpdatesShownRow streams into the model the way the benchmark
// does and checks that the row on screen shows every token, with the height
// it needs, and that the list follows the bottom.
func TestStreamingUpdatesShownRow(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	conv := h.w.current
	apply := applyFrom(h, conv, 0)
	for i := 0; i < 30; i++ {
		apply(&protocol.UserMessage{MessageID: fmt.Sprint("u", i), Content: "next"})
		apply(&protocol.Delta{MessageID: fmt.Sprint("m", i), Content: historyMessage})
	}
	h.frame()
	apply(&protocol.UserMessage{MessageID: "u", Content: "stream"})
	h.frame()
	text := strings.Repeat("word ", 300)
	for i := 0; i < len(text); i += 16 {
		apply(&protocol.Delta{MessageID: "m", Content: text[i:min(i+16, len(text))]})
		h.frame()
	}
	last := len(h.w.transcript.rows) - 1
	var shown *rowState
	for _, s := range h.w.transcript.views {
		if s.key.id == last && s.key.gen == h.w.transcript.gen {
			shown = s
		}
	}
	if shown == nil || (shown.text == nil && shown.stream == nil) {
		t.Fatal("the streaming row is not on screen")
	}
	if got := rowText(shown); strings.TrimSpace(got) != strings.TrimSpace(text) {
		t.Fatalf("the row shows %d characters of %d", len(got), len(text))
	}
	// A streaming block has up to growStep of room below its text.
	need := shown.measureAt(h.w.transcript.width)
	if got := h.w.transcript.heights[last]; got < need || got > need+growStep || need < 100 {
		t.Fatalf("row height %v, needs %v", got, need)
	}
	if !h.w.transcript.atBottom() {
		t.Fatal("the list stopped following the bottom")
	}
}
