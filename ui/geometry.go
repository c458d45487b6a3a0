package ui

import "fyne.io/fyne/v2"

// Window sizes: the first start's, and the smallest the window takes.
var (
	defaultWindowSize = fyne.NewSize(1100, 720)
	minWindowSize     = fyne.NewSize(760, 480)
)

// dialogMargin is the room a dialog leaves around it when the window is
// smaller than the dialog would be: the window shows around it, so that
// it reads as a dialog and not as the window's new content.
const dialogMargin = 40

// dialogSize is want, or less where the window has no room for it (its
// content then scrolls inside the dialog).
func (w *Window) dialogSize(want fyne.Size) fyne.Size {
	room := w.win.Canvas().Size().SubtractWidthHeight(2*dialogMargin, 2*dialogMargin)
	if room.Width <= 0 || room.Height <= 0 {
		return want // not laid out yet
	}
	return want.Min(room)
}

// prefWindowSize is the preference key of the window's size at its last
// close, width and height in one value: closing then changes the
// preferences once.
const prefWindowSize = "window.size"

// The keys the size had before prefWindowSize, read when it is absent.
const (
	prefWindowWidth  = "window.width"
	prefWindowHeight = "window.height"
)

// savedSize is the size the window had when it was last closed, or the
// default size. (Fyne 2.7 cannot place a window, so only its size is
// remembered; the system places it.)
func (w *Window) savedSize() fyne.Size {
	p := w.app.Preferences()
	var s fyne.Size
	if wh := p.FloatList(prefWindowSize); len(wh) == 2 {
		s = fyne.NewSize(float32(wh[0]), float32(wh[1]))
	} else {
		s = fyne.NewSize(float32(p.FloatWithFallback(prefWindowWidth, float64(defaultWindowSize.Width))),
			float32(p.FloatWithFallback(prefWindowHeight, float64(defaultWindowSize.Height))))
	}
	return s.Max(minWindowSize)
}

// saveSize remembers the window's size for the next start, if it changed.
func (w *Window) saveSize() {
	s := w.win.Canvas().Size()
	if s.Width < minWindowSize.Width || s.Height < minWindowSize.Height {
		return // not shown, or not laid out yet
	}
	if s == w.savedSize() {
		return
	}
	w.app.Preferences().SetFloatList(prefWindowSize, []float64{float64(s.Width), float64(s.Height)})
}

// minSizeLayout stacks its objects and asks for at least min: the window
// then cannot shrink below it.
type minSizeLayout struct{ min fyne.Size }

func (l minSizeLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objs {
		o.Move(fyne.NewPos(0, 0))
		o.Resize(size)
	}
}

func (l minSizeLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	m := l.min
	for _, o := range objs {
		m = m.Max(o.MinSize())
	}
	return m
}
