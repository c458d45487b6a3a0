package ui

import (
	"math"
	"runtime"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"
)

// fyneWheelNotch is what Fyne's desktop driver reports for one notch of a
// mouse wheel (its scrollSpeed: 25 on Linux, Windows and the BSDs, 10 on
// macOS, whose events are already in pixels the system accelerated).
func fyneWheelNotch() float32 {
	if runtime.GOOS == "darwin" {
		return 0
	}
	return 25
}

// wheelDistance is how far a wheel event of dy (as Fyne reports it) scrolls
// a view of height viewHeight. Fyne scrolls 25 px a notch, about a fifth of
// what other applications scroll, so reading a long reply took a great
// deal of wheel turning; this scrolls GTK's distance instead, the view's
// height to the power 2/3 a notch (71 px for a 600 px view, 100 px for
// 1,000), as Firefox and the GNOME applications do. A fraction of a notch
// (a high-resolution wheel, a touchpad) scrolls that fraction. On macOS
// the system's own pixels are kept.
func wheelDistance(dy, viewHeight float32) float32 {
	notch := fyneWheelNotch()
	if notch == 0 || viewHeight <= 0 {
		return dy
	}
	return dy / notch * float32(math.Pow(float64(viewHeight), 2.0/3))
}

// wheel lies over the transcript and takes its wheel events, which
// widget.List would scroll by Fyne's short notch. It takes nothing else:
// not being Tappable, Hoverable or Draggable, clicks, hovers and text
// selection reach the rows below it.
type wheel struct {
	widget.BaseWidget
	t *transcript
}

func newWheel(t *transcript) *wheel {
	w := &wheel{t: t}
	w.ExtendBaseWidget(w)
	return w
}

// Scrolled scrolls the transcript by the platform's wheel distance.
func (w *wheel) Scrolled(e *fyne.ScrollEvent) { w.t.wheelScrolled(e) }

func (w *wheel) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(layout.NewSpacer())
}
