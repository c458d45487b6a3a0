package ui

import (
	"math"
	"runtime"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

// TestWheelScrollsAsOtherApps: one notch of the wheel over the transcript
// scrolls the view's height to the power 2/3 (GTK's and Firefox's
// distance, 4x Fyne's 25 px at 600 px), half a notch half that, up as
// far as down; and the layer that takes the wheel lets the pointer
// through to the rows: a link under it still takes the hover and the
// click (TestLinkPiecesHoverAsOne covers that walk).
func TestWheelScrollsAsOtherApps(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("macOS scrolls by the system's own pixels")
	}
	h := newHarness(t, harnessConfig{size: fyne.NewSize(900, 600)})
	for i := 1; i <= 3; i++ {
		h.send("markdown")
		h.waitFor("a markdown turn", func() bool { return completedTurns(h) == i })
	}
	h.frame()
	tr := h.w.transcript
	c := h.w.Window().Canvas()
	tr.scrollToTop()
	h.frame()
	notch := float32(math.Pow(float64(tr.list.Size().Height), 2.0/3))
	at := fyne.CurrentApp().Driver().AbsolutePositionForObject(tr.root).AddXY(60, 60)
	for _, step := range []struct {
		dy   float32
		want float32
	}{
		{-25, notch},       // a notch down
		{-12.5, notch / 2}, // half a notch (a high-resolution wheel)
		{25, -notch},       // a notch up
	} {
		before := tr.list.GetScrollOffset()
		test.Scroll(c, at, 0, step.dy)
		if got := tr.list.GetScrollOffset() - before; math.Abs(float64(got-step.want)) > 1 {
			t.Fatalf("the wheel's %v over a %v px view scrolled %v px, want %v", step.dy, tr.list.Size().Height, got, step.want)
		}
	}
}
