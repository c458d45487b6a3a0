package ui

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/pilotdesk/pilotdesk/conversation"
)

// TestQuestionKeepsItsContext: an open question sits where the prompt box
// was, under the transcript, which shrinks above it and shows the turn
// that asked; the wheel scrolls the transcript behind the question (over
// it or over the transcript) and so does PageUp; a click on the list, the
// New conversation button or a transcript row does nothing; the question
// cannot be dismissed, and answering it gives the prompt box back.
func TestQuestionKeepsItsContext(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(900, 600)})
	h.send("markdown")
	h.waitFor("the first turn", func() bool { return completedTurns(h) == 1 })
	h.send("approve it")
	m := h.waitModal(kindApproval)
	h.frame()
	d := fyne.CurrentApp().Driver()
	c := h.w.Window().Canvas()
	tr := h.w.transcript
	box := m.popup.box
	boxTop := d.AbsolutePositionForObject(box).Y
	trBottom := d.AbsolutePositionForObject(tr.root).Y + tr.root.Size().Height
	if boxTop < trBottom-1 {
		t.Fatalf("the question (top %v) covers the transcript (bottom %v)", boxTop, trBottom)
	}
	if h.w.composerRow.Visible() {
		t.Fatal("the prompt box shows beside the question")
	}
	// The prompt that asked is in view, just above the question.
	ask := rowsOf(h, conversation.RowUser)[1]
	if top := tr.rowTop(ask) - tr.list.GetScrollOffset(); top < 0 || top > tr.list.Size().Height {
		t.Fatalf("the prompt that asked is at %v, out of the view (0–%v)", top, tr.list.Size().Height)
	}

	// The wheel, over the question and over the transcript, scrolls it.
	before := tr.list.GetScrollOffset()
	test.Scroll(c, d.AbsolutePositionForObject(box).AddXY(10, 10), 0, 60)
	over := tr.list.GetScrollOffset()
	if over >= before {
		t.Fatalf("the wheel over the question: offset %v from %v", over, before)
	}
	test.Scroll(c, d.AbsolutePositionForObject(tr.root).AddXY(50, 50), 0, 60)
	if got := tr.list.GetScrollOffset(); got >= over {
		t.Fatalf("the wheel over the transcript: offset %v from %v", got, over)
	}
	m.typedKey(&fyne.KeyEvent{Name: fyne.KeyPageDown})
	h.frame()
	if !tr.atBottom() {
		t.Fatal("PageDown behind the question did not scroll down")
	}

	// Nothing else takes a click.
	current := h.w.current
	test.TapCanvas(c, fyne.NewPos(40, 30))                                         // the New conversation button
	test.TapCanvas(c, d.AbsolutePositionForObject(h.w.sidebar.list).AddXY(40, 20)) // the list
	test.TapCanvas(c, d.AbsolutePositionForObject(tr.root).AddXY(100, 40))         // the transcript
	h.frame()
	if h.w.current != current || !h.modalOpen() || !m.popup.Visible() {
		t.Fatalf("a click outside the question did something: conversation %s (was %s), question open %v", h.w.current, current, h.modalOpen())
	}

	// The answer, with a key: the prompt box is back.
	h.typeRunes("a")
	h.frame()
	if h.modalOpen() || !h.w.composerRow.Visible() || h.w.questionSlot.Visible() {
		t.Fatal("after the answer the question is still there, or the prompt box is not")
	}
}
