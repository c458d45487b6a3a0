package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestRowButtonsScrolledIntoView: Tab reaching a row's button in a row
// the view cuts (a tool row's expand button, a finished turn's Copy reply)
// scrolls the list by the least that shows it whole, as it does for a
// link; a button already in view moves nothing.
func TestRowButtonsScrolledIntoView(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(860, 560)})
	h.send("formatting")
	h.waitFor("the formatting turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	h.send("do the work")
	h.waitFor("the work turn", func() bool { return completedTurns(h) == 2 })
	h.frame()
	tr := h.w.transcript
	c := h.w.Window().Canvas()
	d := fyne.CurrentApp().Driver()
	view := tr.list.Size().Height
	span := func(o fyne.CanvasObject) (top, bottom float32) {
		top = d.AbsolutePositionForObject(o).Y - d.AbsolutePositionForObject(tr.list).Y
		return top, top + o.Size().Height
	}
	// tab focuses b by Tab, from the composer.
	tab := func(b fyne.Focusable, what string) {
		t.Helper()
		c.Focus(h.w.composer)
		for i := 0; i < 300; i++ {
			test.FocusNext(c)
			if c.Focused() == b {
				return
			}
		}
		t.Fatalf("Tab never reached %s", what)
	}
	// The first turn's status line: rows follow it, so the list can
	// scroll it to the view's bottom edge.
	firstLine := rowOf(h, conversation.RowStatus)
	shell := rowsOf(h, conversation.RowTool)[0]

	// A turn in Plan, for its plan card's checkboxes.
	test.Tap(h.w.mode.toggle.plan)
	h.send("do the work")
	h.waitFor("the Plan turn", func() bool { return completedTurns(h) == 3 })
	plan := rowsOf(h, conversation.RowPlan)[0]

	type part interface {
		fyne.Focusable
		fyne.CanvasObject
	}
	for _, tc := range []struct {
		what   string
		row    int
		button func() part
	}{
		{"the shell row's expand button", shell, func() part { return h.shownTool(shell).expand }},
		{"the first turn's Copy reply", firstLine, func() part { return h.shownRowOf(firstLine).line.copy }},
		{"the plan's first step", plan, func() part { return h.shownPlan(plan).steps.Objects[0].(*rowCheck) }},
	} {
		// The row's top a few pixels above the view's bottom edge.
		tr.list.ScrollToOffset(tr.rowTop(tc.row) - view + theme.Padding()*2)
		h.frame()
		b := tc.button()
		if _, bottom := span(b); bottom <= view {
			t.Fatalf("%s ends at %v in a view %v high before Tab: it is not cut", tc.what, bottom, view)
		}
		tab(b, tc.what)
		h.frame()
		top, bottom := span(b)
		if top < 0 || bottom > view+0.5 {
			t.Fatalf("%s, focused, is at %v–%v, outside the view's 0–%v", tc.what, top, bottom, view)
		}
		if bottom < view-0.5 {
			t.Fatalf("the list scrolled more than needed: %s ends at %v, the view at %v", tc.what, bottom, view)
		}
		// Focused again while in view: nothing moves.
		before := tr.list.GetScrollOffset()
		c.Focus(h.w.composer)
		c.Focus(b)
		h.frame()
		if got := tr.list.GetScrollOffset(); got != before {
			t.Fatalf("focusing %s in view scrolled from %v to %v", tc.what, before, got)
		}
	}
}

func completedTurns(h *harness) int {
	n := 0
	for _, r := range h.rows() {
		if r.Kind == conversation.RowStatus && r.State == protocol.StatusCompleted {
			n++
		}
	}
	return n
}

// TestRowButtonKeepsTheKeyboard: Space on a tool row's expand button that
// Tab reached opens the row and leaves the keyboard on the button, so
// Space closes it again; after a click, or a Show all the row makes anew,
// the keyboard is the composer's.
func TestRowButtonKeepsTheKeyboard(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(1000, 900)})
	h.send("do the work")
	h.waitFor("the turn", func() bool { return completedTurns(h) == 1 })
	h.frame()
	shell := rowsOf(h, conversation.RowTool)[0]
	c := h.w.Window().Canvas()
	expand := h.shownTool(shell).expand
	for i := 0; c.Focused() != expand; i++ {
		if i == 300 {
			t.Fatal("Tab never reached the shell row's expand button")
		}
		test.FocusNext(c)
	}
	closed := h.w.transcript.heights[shell]
	c.Focused().TypedKey(&fyne.KeyEvent{Name: fyne.KeySpace})
	h.frame()
	if h.w.transcript.heights[shell] <= closed {
		t.Fatal("Space on the expand button did not open the row")
	}
	if c.Focused() != h.shownTool(shell).expand {
		t.Fatalf("Space on the expand button moved the keyboard to %T", c.Focused())
	}
	c.Focused().TypedKey(&fyne.KeyEvent{Name: fyne.KeySpace})
	h.frame()
	if h.w.transcript.heights[shell] != closed {
		t.Fatal("Space again did not close the row")
	}

	// A click that leaves nothing focused, then the row opened by its
	// button: the keyboard is the composer's again.
	c.Unfocus()
	test.Tap(h.shownTool(shell).expand)
	h.frame()
	if c.Focused() != h.w.composer {
		t.Fatalf("after a click that left nothing focused, the keyboard is on %T", c.Focused())
	}

	// Show all, pressed with Space, is made anew with the row: the
	// keyboard goes to the composer, not with the button that went away.
	var all *rowButton
	for i := 0; all == nil || c.Focused() != all; i++ {
		if i == 300 {
			t.Fatal("Tab never reached Show all")
		}
		test.FocusNext(c)
		if b, ok := c.Focused().(*rowButton); ok && strings.HasPrefix(b.Text, "Show all") {
			all = b
		}
	}
	c.Focused().TypedKey(&fyne.KeyEvent{Name: fyne.KeySpace})
	h.frame()
	if !strings.Contains(shownText(h.shownTool(shell).obj), "Show less") {
		t.Fatal("Space on Show all did not show every line")
	}
	if c.Focused() != h.w.composer {
		t.Fatalf("after Show all the keyboard is on %T, want the composer", c.Focused())
	}
}
