package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// questionLayer holds an open question over the window. The question
// cannot be dismissed and nothing else can be clicked while it is open,
// as with a modal dialog; but it keeps its context: the question sits
// where the prompt box was, under the transcript, which shrinks to the
// room above it and stays undimmed and scrollable (the wheel anywhere,
// PageUp and PageDown), so the turn that led to the question stays in
// view and can be read back. Everything else is dimmed.
type questionLayer struct {
	widget.BaseWidget
	// Content is the question's box.
	Content fyne.CanvasObject
	w       *Window
	box     *fyne.Container
	dims    [4]*canvas.Rectangle
	shown   bool
}

func newQuestionLayer(w *Window, content fyne.CanvasObject) *questionLayer {
	l := &questionLayer{w: w, Content: content}
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameOverlayBackground))
	bg.CornerRadius = theme.InputRadiusSize()
	bg.StrokeColor = theme.Color(theme.ColorNamePrimary)
	bg.StrokeWidth = 2
	l.box = container.NewStack(bg, content)
	for i := range l.dims {
		l.dims[i] = canvas.NewRectangle(theme.Color(theme.ColorNameShadow))
	}
	l.ExtendBaseWidget(l)
	l.BaseWidget.Hide()
	return l
}

// Show puts the question where the prompt box was (which it hides) and
// over the window.
func (l *questionLayer) Show() {
	if l.shown {
		return
	}
	l.shown = true
	l.w.composerRow.Hide()
	l.w.questionSlot.Show()
	l.w.win.Canvas().Overlays().Add(l)
	l.BaseWidget.Show()
	l.fit()
}

// Hide takes the question away and gives the prompt box its place back.
func (l *questionLayer) Hide() {
	if !l.shown {
		return
	}
	l.shown = false
	l.w.win.Canvas().Overlays().Remove(l)
	l.BaseWidget.Hide()
	l.w.questionSlot.Hide()
	l.w.composerRow.Show()
	l.w.chat.Refresh()
}

// fit gives the question the room it needs under the transcript: the
// slot in the chat pane's bottom grows to the box's height at its width,
// and the box is laid over it.
func (l *questionLayer) fit() {
	if !l.shown {
		return
	}
	slot := l.w.questionSlot
	width := l.w.bottomBox.Size().Width
	for range 2 { // a wrapped label's height follows its width
		l.box.Resize(fyne.NewSize(width, l.box.MinSize().Height))
	}
	slot.SetMinSize(fyne.NewSize(0, l.box.MinSize().Height))
	l.w.chat.Refresh()
	if l.w.transcript.follow {
		l.w.transcript.scrollToBottom() // the turn that asked, just above
	}
	l.Resize(l.w.win.Canvas().Size())
	l.Refresh()
}

// Tapped does nothing: a click outside the question goes nowhere.
func (l *questionLayer) Tapped(*fyne.PointEvent) {}

// TappedSecondary does nothing either.
func (l *questionLayer) TappedSecondary(*fyne.PointEvent) {}

// Scrolled scrolls the transcript, wherever the pointer is.
func (l *questionLayer) Scrolled(e *fyne.ScrollEvent) {
	l.w.transcript.wheelScrolled(e)
}

func (l *questionLayer) CreateRenderer() fyne.WidgetRenderer {
	objs := make([]fyne.CanvasObject, 0, len(l.dims)+1)
	for _, d := range l.dims {
		objs = append(objs, d)
	}
	objs = append(objs, l.box)
	return &questionRenderer{l: l, objs: objs}
}

type questionRenderer struct {
	l    *questionLayer
	objs []fyne.CanvasObject
}

func (r *questionRenderer) Destroy()                     {}
func (r *questionRenderer) MinSize() fyne.Size           { return fyne.NewSize(0, 0) }
func (r *questionRenderer) Objects() []fyne.CanvasObject { return r.objs }
func (r *questionRenderer) Refresh() {
	for _, d := range r.l.dims {
		d.FillColor = theme.Color(theme.ColorNameShadow)
		d.Refresh()
	}
	r.Layout(r.l.Size())
	canvas.Refresh(r.l)
}

// Layout dims all but the transcript, and lays the question over its
// slot.
func (r *questionRenderer) Layout(size fyne.Size) {
	l := r.l
	d := fyne.CurrentApp().Driver()
	tp := d.AbsolutePositionForObject(l.w.transcript.root)
	ts := l.w.transcript.root.Size()
	x0, y0, x1, y1 := tp.X, tp.Y, tp.X+ts.Width, tp.Y+ts.Height
	place := func(o fyne.CanvasObject, x, y, w, h float32) {
		o.Move(fyne.NewPos(x, y))
		o.Resize(fyne.NewSize(max(w, 0), max(h, 0)))
	}
	place(l.dims[0], 0, 0, size.Width, y0)
	place(l.dims[1], 0, y1, size.Width, size.Height-y1)
	place(l.dims[2], 0, y0, x0, y1-y0)
	place(l.dims[3], x1, y0, size.Width-x1, y1-y0)
	sp := d.AbsolutePositionForObject(l.w.questionSlot)
	ss := l.w.questionSlot.Size()
	place(l.box, sp.X, sp.Y, ss.Width, max(ss.Height, l.box.MinSize().Height))
}
