package ui

import "fyne.io/fyne/v2"

// Window sizes: the first start's, and the smallest the window takes.
var (
	defaultWindowSize = fyne.NewSize(1100, 720)
	minWindowSize     = fyne.NewSize(760, 480)
)

// Preference keys of the window's size at its last close.
const (
	prefWindowWidth  = "window.width"
	prefWindowHeight = "window.height"
)

// savedSize is the size the window had when it was last closed, or the
// default size. (Fyne 2.7 cannot place a window, so only its size is
// remembered; the system places it.)
func (w *Window) savedSize() fyne.Size {
	p := w.app.Preferences()
	s := fyne.NewSize(float32(p.FloatWithFallback(prefWindowWidth, float64(defaultWindowSize.Width))),
		float32(p.FloatWithFallback(prefWindowHeight, float64(defaultWindowSize.Height))))
	return s.Max(minWindowSize)
}

// saveSize remembers the window's size for the next start.
func (w *Window) saveSize() {
	s := w.win.Canvas().Size()
	if s.Width < minWindowSize.Width || s.Height < minWindowSize.Height {
		return // not shown, or not laid out yet
	}
	p := w.app.Preferences()
	p.SetFloat(prefWindowWidth, float64(s.Width))
	p.SetFloat(prefWindowHeight, float64(s.Height))
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
