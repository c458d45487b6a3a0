package ui

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/client/clienttest"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// longHistory applies turns of a prompt and a reply to the window's current
// conversation, as a relay's replay would, and returns the last seq.
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
			applyAt(h, conv, seq, data)
		}
	}
	return seq
}

// applyAt applies data to the window's store as event seq of conv, as the
// relay would send it.
func applyAt(h *harness, conv string, seq int64, data any) {
	h.w.store.Apply(clienttest.Event(h.t, conv, seq, data))
}

// applyFrom returns a function that applies each event it is given to
// conv, at the seqs after seq, one after another.
func applyFrom(h *harness, conv string, seq int64) func(data any) {
	return func(data any) {
		seq++
		applyAt(h, conv, seq, data)
	}
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
	if len(tr.rows) < 150 || tr.empty.Visible() || tr.hint.Text != emptyHint(h.w.opts) {
		t.Fatalf("after the replay: %d rows drawn, hint shown %v", len(tr.rows), tr.empty.Visible())
	}
	if !tr.atBottom() {
		t.Fatal("the list does not show the newest row")
	}
}

// TestLongReplayLogged: the frame that draws a long replayed conversation
// logs "conversation loaded" once, with its rows, the replay's time and the
// wall clock in microseconds (tools/winbench times the open to the first
// frame after it); a short one is not logged.
func TestLongReplayLogged(t *testing.T) {
	logger, logs := captureLogs()
	h := newHarness(t, harnessConfig{options: Options{Logger: logger}})
	conv := h.w.current
	h.w.subscribed[conv] = true // as switchTo does before the replay
	seq := longHistory(h, 600)
	h.frame()
	if strings.Contains(logs(), "conversation loaded") {
		t.Fatal("logged while the replay runs")
	}
	before := time.Now().UnixMicro()
	h.w.store.Apply(client.Event{Data: &protocol.Subscribed{ConversationID: conv, Mode: protocol.ModeAct, Seq: seq}})
	h.frame()
	h.frame()
	line := regexp.MustCompile(`msg="conversation loaded" conversation=\S+ rows=(\d+) took=\S+ shownAtMicros=(\d+)`)
	all := line.FindAllStringSubmatch(logs(), -1)
	if len(all) != 1 {
		t.Fatalf("%d lines \"conversation loaded\", want 1; the log:\n%s", len(all), logs())
	}
	rows, _ := strconv.Atoi(all[0][1])
	at, _ := strconv.ParseInt(all[0][2], 10, 64)
	if rows <= longReplay || at < before || at > time.Now().UnixMicro() {
		t.Fatalf("logged rows %d (1,200 wanted), at %d (the frame between %d and now)", rows, at, before)
	}

	short := newHarness(t, harnessConfig{options: Options{Logger: logger}})
	conv = short.w.current
	short.w.subscribed[conv] = true
	seq = longHistory(short, 50)
	short.frame()
	short.w.store.Apply(client.Event{Data: &protocol.Subscribed{ConversationID: conv, Mode: protocol.ModeAct, Seq: seq}})
	short.frame()
	if n := strings.Count(logs(), "conversation loaded"); n != 1 {
		t.Fatalf("a replay of 150 rows logged too (%d lines)", n)
	}
}

// TestLongConversationHeldInSteps: a long conversation's transcript holds
// its last windowRows rows, takes new ones at the bottom, and older ones in
// steps of extendChunk as the user scrolls up to the first, keeping the
// rows on screen where they were; Copy reply finds a turn that began above
// the rows held.
func TestLongConversationHeldInSteps(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	conv := h.w.current
	apply := applyFrom(h, conv, longHistory(h, 300))
	// Two rows more, so that the rows held begin in the middle of a turn.
	apply(&protocol.UserMessage{MessageID: "u-last", Content: "and the last step"})
	apply(&protocol.Idle{Status: protocol.StatusCompleted})
	h.frame()
	tr := h.w.transcript
	total := len(h.w.store.Transcript(conv))
	if total < windowRows+extendChunk {
		t.Fatalf("%d rows: the test needs more than %d", total, windowRows+extendChunk)
	}
	if len(tr.rows) != windowRows || tr.base != total-windowRows || tr.list.Length() != windowRows {
		t.Fatalf("holds %d rows from %d (list %d) of %d", len(tr.rows), tr.base, tr.list.Length(), total)
	}
	if !tr.atBottom() {
		t.Fatal("the list does not show the newest row")
	}

	// Copy reply under a turn whose prompt is above the rows held.
	first := -1
	for i, r := range tr.rows {
		if r.Kind == conversation.RowUser {
			break
		}
		if r.Kind == conversation.RowStatus {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatal("the rows held begin with a whole turn: the test needs one cut")
	}
	turn := -1
	for _, r := range h.w.store.Rows(conv, 0, tr.base+first) {
		if r.Kind == conversation.RowUser {
			turn++
		}
	}
	h.w.copyReplyBefore(first)
	if got, want := h.w.app.Clipboard().Content(), h.w.store.MessageText(conv, fmt.Sprint("m", turn)); got != want || got == "" {
		t.Fatalf("copied %q, want %q", got, want)
	}

	// A new row comes at the bottom.
	apply(&protocol.UserMessage{MessageID: "new", Content: "one more"})
	h.frame()
	if n := len(tr.rows); n != windowRows+1 || tr.rows[n-1].Text != "one more" || tr.list.Length() != n {
		t.Fatalf("after a new row: %d rows, last %q", n, tr.rows[n-1].Text)
	}

	// Scrolling up to the first row held brings older ones, in steps.
	for step := 0; tr.base > 0; step++ {
		if step > total/extendChunk+1 {
			t.Fatalf("still %d rows above after %d steps", tr.base, step)
		}
		base, held := tr.base, tr.rows[0]
		tr.list.ScrollToTop()
		h.loop.WaitFor(t, waitTimeout, "older rows", func() bool { return tr.base < base }, nil)
		added := base - tr.base
		if added != min(base, extendChunk) || !reflect.DeepEqual(tr.rows[added], held) || tr.list.Length() != len(tr.rows) {
			t.Fatalf("step %d: %d rows added, the first held before at %d", step, added, added)
		}
		if want := h.w.store.Rows(conv, tr.base, tr.base+1)[0]; !reflect.DeepEqual(tr.rows[0], want) {
			t.Fatalf("step %d: the first row is %+v, the store says %+v", step, tr.rows[0], want)
		}
		// The row that was at the top is still there: the list scrolled
		// down by the rows added above it.
		var above float32
		for _, ht := range tr.heights[:added] {
			above += ht + theme.Padding()
		}
		if off := tr.list.GetScrollOffset(); off < above-1 || off > above+1 {
			t.Fatalf("step %d: offset %v, the rows added are %v high", step, off, above)
		}
	}
	if len(tr.rows) != total+1 {
		t.Fatalf("at the top: %d rows of %d", len(tr.rows), total+1)
	}
}

// TestOlderRowsComeBeforeTheTop: scrolling up a long conversation, older
// rows are added while the view is still prefetchRows rows or fewer from
// the first row held, not once the user has reached it, and the rows on
// screen stay where they were; further down, nothing is fetched.
func TestOlderRowsComeBeforeTheTop(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	longHistory(h, 300)
	h.frame()
	tr := h.w.transcript
	if tr.base == 0 || len(tr.rows) != windowRows {
		t.Fatalf("holds %d rows from %d: the test needs a conversation longer than %d rows", len(tr.rows), tr.base, windowRows)
	}

	// Well below the prefetch margin: nothing is fetched.
	tr.list.ScrollToOffset(tr.rowTop(prefetchRows + 60))
	h.frame()
	h.loop.Drain()
	if first, _ := tr.shownRange(); first < prefetchRows {
		t.Fatalf("the view begins at row %d, the test wants it below %d", first, prefetchRows)
	}
	if len(tr.rows) != windowRows {
		t.Fatalf("%d rows held after scrolling to the middle, want %d", len(tr.rows), windowRows)
	}

	// Near the top, but not at it: older rows come, and the row at the
	// top of the view stays there.
	target := prefetchRows / 2
	tr.list.ScrollToOffset(tr.rowTop(target))
	base, held := tr.base, tr.rows[target]
	h.loop.WaitFor(t, waitTimeout, "older rows", func() bool { return tr.base < base }, nil)
	added := base - tr.base
	if added != min(base, extendChunk) || !reflect.DeepEqual(tr.rows[target+added], held) {
		t.Fatalf("%d rows added; the row that was at the top of the view is not at %d", added, target+added)
	}
	if first, _ := tr.shownRange(); first != target+added {
		t.Fatalf("the view begins at row %d, it began at the row now %d", first, target+added)
	}
	if off, want := tr.list.GetScrollOffset(), tr.rowTop(target+added); off < want-1 || off > want+1 {
		t.Fatalf("offset %v, the row that was at the top of the view begins at %v", off, want)
	}
	if tr.following() {
		t.Fatal("the transcript follows the bottom after older rows were added above the view")
	}
}

// TestRowViewsKeptBounded: the list makes a row view at every refresh only
// to read its minimum size, and drops the views of its pool; the views the
// transcript keeps (to redraw a changing row in place) do not grow with
// either, and the row on screen is still redrawn in place.
func TestRowViewsKeptBounded(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	longHistory(h, 120)
	h.frame()
	tr := h.w.transcript
	for i := 0; i < 300; i++ {
		tr.list.Refresh()
	}
	// Scroll through every row held, a view at a time.
	for off := tr.list.GetScrollOffset(); off > 0; off -= tr.list.Size().Height / 2 {
		tr.list.ScrollToOffset(off)
	}
	tr.list.ScrollToBottom()
	if n := len(tr.views); n > maxViews+1 {
		t.Fatalf("%d row views kept, want at most %d", n, maxViews+1)
	}
	last := len(tr.rows) - 1
	if _, shown := tr.updateShown(last); !shown {
		t.Fatalf("the last row, on screen, has no view kept")
	}
}

// TestWidthChangeKeepsTheView: scrolled up a long conversation, a change
// of the window's width (every height above the view measured again, most
// to an estimate) leaves the row that was at the top of the view there,
// as it leaves the bottom in view when following.
func TestWidthChangeKeepsTheView(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	longHistory(h, 40)
	h.frame()
	tr := h.w.transcript
	tr.list.ScrollToOffset(tr.rowTop(len(tr.rows) / 2))
	tr.following()
	h.frame()
	h.loop.Drain()
	first, _ := tr.shownRange()
	held := tr.rows[first]
	win := h.w.Window()
	for _, width := range []float32{win.Canvas().Size().Width - 180, win.Canvas().Size().Width + 120} {
		win.Resize(fyne.NewSize(width, win.Canvas().Size().Height))
		h.frame()
		tr.remeasure() // what the width's debounce timer does
		h.frame()
		h.loop.Drain()
		now, _ := tr.shownRange()
		if !reflect.DeepEqual(tr.rows[now], held) {
			t.Fatalf("at width %v the view begins at row %d (%q), it began at row %d (%q)", width, now, tr.rows[now].Text, first, held.Text)
		}
		first = now
	}
}
