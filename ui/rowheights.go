package ui

import (
	"strings"
	"time"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"

	"github.com/pilotdesk/pilotdesk/conversation"
)

// The virtual list's heights: each row's height measured at the width
// shown, or estimated from its text for the rows never shown, corrected
// as rows come into view, and kept so that what the user reads stays put.

// measureRow returns row i's exact height at the current width.
func (t *transcript) measureRow(i int) float32 {
	if t.width <= 0 {
		return t.estimate(t.rows[i])
	}
	t.measure.show(i, t.rows[i], t.segments(i))
	t.measure.key = rowKey{}
	h := t.measure.measureAt(t.width)
	t.cache[i].exact, t.cache[i].width = true, t.width
	return h
}

// estimate guesses a row's height from its text length.
func (t *transcript) estimate(r conversation.Row) float32 {
	width := t.width
	if width <= 0 {
		width = 600
	}
	if t.unit == nil {
		t.calibrate(width)
	}
	switch r.Kind {
	case conversation.RowPlan:
		// A title, a line per step and the button's line.
		return float32(len(r.Steps())+2) * 2 * theme.TextSize()
	case conversation.RowAgentPlan:
		// A title and a line per step.
		return float32(len(r.Entries())+1) * 2 * theme.TextSize()
	case conversation.RowReasoning:
		// Collapsed, one line; expanded it is measured.
		return 2 * theme.TextSize()
	}
	if r.Changes() != nil {
		// A title, a line per file and the Restore button's line.
		return float32(min(len(r.Changes().Files), cardFiles)+2) * 2.4 * theme.TextSize()
	}
	u := t.unit[r.Kind]
	if u.charWidth <= 0 {
		return u.base
	}
	perLine := max(1, int((width-4*theme.Padding())/u.charWidth))
	lines := 0
	for _, l := range strings.Split(r.Text, "\n") {
		lines += 1 + utf8.RuneCountInString(l)/perLine
	}
	return u.base + float32(max(lines-1, 0))*u.perLine
}

// calibrate measures one- and two-line rows of each kind at width.
func (t *transcript) calibrate(width float32) {
	t.unit = map[conversation.RowKind]estimate{}
	th := theme.Current()
	textW := fyne.MeasureText("The quick brown fox jumps over the lazy dog", th.Size(theme.SizeNameText), fyne.TextStyle{}).Width / 43
	monoW := fyne.MeasureText("0123456789", th.Size(theme.SizeNameText), fyne.TextStyle{Monospace: true}).Width / 10
	for _, k := range []conversation.RowKind{conversation.RowUser, conversation.RowText, conversation.RowCode, conversation.RowTool, conversation.RowStatus, conversation.RowNote} {
		one := conversation.Row{Kind: k, Text: "x", State: conversation.NoteInfo}
		two := one
		two.Text = "x\nx"
		t.measure.show(-1, one, parseMarkdown(one.Text))
		h1 := t.measure.measureAt(width)
		t.measure.show(-1, two, parseMarkdown(two.Text))
		h2 := t.measure.measureAt(width)
		cw := textW
		if k == conversation.RowCode {
			cw = monoW
		}
		t.unit[k] = estimate{base: h1, perLine: max(h2-h1, 0), charWidth: cw}
	}
	// A mode change is a note's line in italic, and measuring one here
	// had Fyne parse the italic faces (3.6 MB of Go heap, kept) for every
	// conversation opened, mode changes or not: a note's estimate stands
	// for it until one is shown and measured.
	t.unit[conversation.RowMode] = t.unit[conversation.RowNote]
	t.measure.key = rowKey{}
}

// scheduleFixes applies heights found during the list's layout once that
// layout is over (SetItemHeight from inside it would re-enter it).
func (t *transcript) scheduleFixes() {
	if t.fixScheduled {
		return
	}
	t.fixScheduled = true
	t.win.later(0, t.applyFixes)
}

func (t *transcript) applyFixes() {
	t.fixScheduled = false
	if len(t.fixes) == 0 {
		return
	}
	follow := t.following()
	fixes := t.fixes
	t.fixes = map[int]float32{}
	// Rows above the top of the view that change height would move what
	// the user reads: the view moves with them (an estimate corrected as
	// the list lays a row out just above the view, rows just added above
	// by extendUp).
	offset := t.list.GetScrollOffset()
	var moved float32
	for i, h := range fixes {
		if i >= len(t.rows) {
			delete(fixes, i)
			continue
		}
		if !follow && t.rowTop(i) < offset {
			moved += h - t.heights[i]
		}
	}
	t.setHeights(fixes)
	if follow {
		t.scrollToBottom()
	} else if moved != 0 {
		t.list.ScrollToOffset(offset + moved)
		t.lastOffset = t.list.GetScrollOffset()
	}
}

// rowTop is where row i begins in the list.
func (t *transcript) rowTop(i int) float32 {
	var y float32
	for _, h := range t.heights[:i] {
		y += h
	}
	return y + float32(i)*theme.Padding()
}

// atBottom reports whether the newest row is in view (follow mode).
func (t *transcript) atBottom() bool {
	if len(t.rows) == 0 {
		return true
	}
	pad := theme.Padding()
	var total float32
	for _, h := range t.heights {
		total += h
	}
	total += pad * float32(len(t.heights)-1)
	view := t.list.Size().Height
	// The margin is what is drawn below the text: the padding, and the
	// room a streaming block is given to grow into (growRoom), blank
	// until its lines come.
	margin := 2 * pad
	if !t.rows[len(t.rows)-1].Done {
		margin += growStep
	}
	return total <= view || t.list.GetScrollOffset()+view >= total-margin
}

func (t *transcript) widthChanged(w float32) {
	if w == t.width {
		return
	}
	first := t.width == 0
	t.width = w
	t.unit = nil
	if first {
		t.remeasure()
		return
	}
	// Dragging a window edge changes the width many times a second: wait
	// for it to settle before measuring again.
	if t.widthTimer != nil {
		t.widthTimer.Stop()
	}
	t.widthTimer = t.win.later(120*time.Millisecond, t.remeasure)
}

// remeasure recomputes every height for the current width.
func (t *transcript) remeasure() {
	if len(t.rows) == 0 {
		return
	}
	follow := t.following()
	// Scrolled up, the row at the top of the view stays there: every
	// height above it changes with the width (most to an estimate), and
	// the view would otherwise jump to other rows.
	anchor, into := 0, float32(0)
	if !follow {
		anchor, _ = t.shownRange()
		into = t.list.GetScrollOffset() - t.rowTop(anchor)
	}
	rows := t.rows
	t.gen++ // every visible row must be laid out again
	hs := make(map[int]float32, len(rows))
	exactFrom := max(0, len(rows)-60)
	for i := range rows {
		t.cache[i].exact = false
		if i >= exactFrom {
			hs[i] = t.measureRow(i)
		} else {
			hs[i] = t.estimate(rows[i])
		}
	}
	t.setHeights(hs)
	if follow {
		t.scrollToBottom()
		return
	}
	t.list.ScrollToOffset(max(0, t.rowTop(anchor)+min(into, t.heights[anchor])))
	t.lastOffset = t.list.GetScrollOffset()
}

// widthWatcher lays out its only child at full size and reports width
// changes.
type widthWatcher struct {
	onWidth   func(float32)
	onResized func()
}

func (l *widthWatcher) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	l.onWidth(size.Width)
	for _, o := range objs {
		o.Resize(size)
		o.Move(fyne.NewPos(0, 0))
	}
	l.onResized()
}

func (l *widthWatcher) MinSize(objs []fyne.CanvasObject) fyne.Size {
	return fyne.NewSize(200, 100)
}
