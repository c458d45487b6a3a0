package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
)

// settleWindow stands for the GL driver's window in TestFrameSettlesLayout:
// its canvas has the layout pass of Fyne's GL canvas (EnsureMinSize),
// which the test driver's canvas lacks.
type settleWindow struct {
	fyne.Window
	canvas *settleCanvas
	refits int // SetFixedSize calls
}

func (s *settleWindow) Canvas() fyne.Canvas     { return s.canvas }
func (s *settleWindow) SetFixedSize(fixed bool) { s.refits++; s.Window.SetFixedSize(fixed) }

type settleCanvas struct {
	fyne.Canvas
	settle func() bool
}

func (c *settleCanvas) EnsureMinSize() bool { return c.settle() }

// A frame lays out what its changes need before Fyne paints it, so that
// the paint's own layout pass finds nothing to do and cannot mark the
// window dirty again (a second, identical paint of every streaming
// update); and a change of the content's minimum size found then fits the
// window as the paint would have.
func TestFrameSettlesLayout(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	sw := &settleWindow{Window: h.w.win}
	var settled []string // the transcript's text at each layout pass
	grown := false
	sw.canvas = &settleCanvas{Canvas: h.w.win.Canvas(), settle: func() bool {
		settled = append(settled, h.text())
		// The first pass that sees the reply says the content's minimum
		// size changed.
		if !grown && strings.Contains(h.text(), "Release plan") {
			grown = true
			return true
		}
		return false
	}}
	h.w.win = sw

	h.send("markdown")
	h.waitFor("the reply", func() bool { return strings.Contains(h.text(), "That is all.") })
	h.waitFor("a layout pass after the reply", func() bool {
		return len(settled) > 0 && strings.Contains(settled[len(settled)-1], "That is all.")
	})
	if !grown {
		t.Fatalf("no layout pass saw the reply; passes saw %q", settled)
	}
	if sw.refits != 1 {
		t.Errorf("the window was fitted %d times after the content's minimum size changed once, want 1", sw.refits)
	}
}
