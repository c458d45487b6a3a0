package ui

import (
	"image/color"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/ui/store"
)

// waitIndicator is the line above the composer that says the agent is
// thinking, or that it waits for the user's answer and how long it will.
// Everything here runs on the UI goroutine.
type waitIndicator struct {
	box   *fyne.Container
	icon  *widget.Icon
	dots  *thinkingDots
	label *widget.Label
	shown string // the words shown, to touch the widgets only on change
}

func newWaitIndicator(later func(time.Duration, func()) *time.Timer) *waitIndicator {
	w := &waitIndicator{icon: widget.NewIcon(theme.HistoryIcon()), dots: newThinkingDots(later), label: widget.NewLabel("")}
	w.label.Importance = widget.MediumImportance
	w.box = container.NewHBox(container.NewStack(w.dots.root, w.icon), w.label)
	w.box.Hide()
	return w
}

// restart steps the dots again on the window's new timers (SetClient: the
// old context's steps will not run).
func (w *waitIndicator) restart() { w.dots.restart() }

// show says "thinking" while a turn has shown nothing yet, "waiting for
// your answer" with the time left while a question is open, and nothing
// otherwise; it touches its widgets only when the words change.
func (w *waitIndicator) show(v store.View, now time.Time) {
	var text string
	switch {
	case v.Pending != nil:
		text = conversation.WaitingText(v.Pending.Deadline, now)
	case v.Thinking:
		text = conversation.ThinkingText
	}
	if text == w.shown {
		return
	}
	w.shown = text
	switch {
	case v.Pending != nil:
		w.icon.SetResource(theme.HistoryIcon())
		w.label.Importance = widget.WarningImportance
		w.label.SetText(text)
		w.dots.Stop()
		w.dots.root.Hide()
		w.icon.Show()
		w.box.Show()
	case v.Thinking:
		w.label.Importance = widget.MediumImportance
		w.label.SetText(text)
		w.icon.Hide()
		w.dots.root.Show()
		w.dots.Start()
		w.box.Show()
	default:
		w.dots.Stop()
		w.box.Hide()
	}
}

// thinkingDots is the "Thinking…" indicator: three dots, one lit at a
// time, stepped four times a second on the window's timer. Fyne's
// widget.Activity animates at 60 frames a second, and every frame repaints
// the whole window (docs/performance.md). Everything here runs on the UI
// goroutine.
type thinkingDots struct {
	root  fyne.CanvasObject
	dots  [3]*canvas.Circle
	later func(time.Duration, func()) *time.Timer
	on    bool
	gen   int // a Start's steps stop when a later Start or Stop moves it
	step  int
}

// thinkingStep is how long each dot stays lit.
const thinkingStep = 250 * time.Millisecond

func newThinkingDots(later func(time.Duration, func()) *time.Timer) *thinkingDots {
	d := &thinkingDots{later: later}
	objs := make([]fyne.CanvasObject, len(d.dots))
	for i := range d.dots {
		d.dots[i] = canvas.NewCircle(color.Transparent)
		objs[i] = d.dots[i]
	}
	d.root = container.New(dotsLayout{}, objs...)
	return d
}

// dotsLayout puts the dots in a row, centred, in the space of an inline
// icon.
type dotsLayout struct{}

func (dotsLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	side := theme.IconInlineSize() / 4
	gap := (theme.IconInlineSize() - 3*side) / 2
	x := (size.Width - theme.IconInlineSize()) / 2
	for _, o := range objs {
		o.Resize(fyne.NewSquareSize(side))
		o.Move(fyne.NewPos(x, (size.Height-side)/2))
		x += side + gap
	}
}

func (dotsLayout) MinSize([]fyne.CanvasObject) fyne.Size {
	return fyne.NewSquareSize(theme.IconInlineSize())
}

// Start lights the dots in turn until Stop.
func (d *thinkingDots) Start() {
	if d.on {
		return
	}
	d.on = true
	d.gen++
	d.tick(d.gen)
}

// Stop leaves the dots as they are; the indicator is hidden with them.
func (d *thinkingDots) Stop() {
	d.on = false
	d.gen++
}

// restart starts the steps again after the window's timer was replaced
// (SetClient), which drops the one scheduled.
func (d *thinkingDots) restart() {
	if d.on {
		d.on = false
		d.Start()
	}
}

func (d *thinkingDots) tick(gen int) {
	if !d.on || gen != d.gen {
		return
	}
	fg := theme.Color(theme.ColorNameForeground)
	r, g, b, _ := fg.RGBA()
	for i, c := range d.dots {
		a := uint8(0x50)
		if i == d.step {
			a = 0xff
		}
		c.FillColor = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: a}
		c.Refresh()
	}
	d.step = (d.step + 1) % len(d.dots)
	d.later(thinkingStep, func() { d.tick(gen) })
}
