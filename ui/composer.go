package ui

import (
	"image/color"
	"reflect"
	"time"
	"unsafe"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// blinkTimeout is how long the composer's cursor blinks after the last key,
// click or focus; then it stays solid until the next one, as Windows'
// caret does after its caret timeout (SPI_GETCARETTIMEOUT, 5 s by default;
// GTK's gtk-cursor-blink-timeout is 10 s). Fyne redraws the whole window
// for every change on screen, and each step of the blink costs about what
// a second of the idle window's own loop does (docs/performance.md).
const blinkTimeout = 5 * time.Second

// blinkStep is how long the blinking cursor is shown, then dimmed: one
// frame each, two a second. Fyne's own blink fades the cursor in and out,
// a frame for each step of the fade, about eight a second.
const blinkStep = 500 * time.Millisecond

// cursorDimAlpha is the dimmed cursor's opacity, as in Fyne's blink.
const cursorDimAlpha = 0x16

type composerEntry struct {
	widget.Entry
	onEnter    func()
	onEscape   func()
	onShortcut func(fyne.Shortcut) bool
	// onKey takes the window's keys (the page keys, F10) first.
	onKey func(*fyne.KeyEvent) bool
	shift bool

	// later runs f on the UI goroutine after d (the window's later); nil
	// leaves the cursor blinking as Fyne makes it.
	later func(d time.Duration, f func()) *time.Timer
	// lastInput is when the user last typed, clicked or focused here;
	// blinkUntil when the blink ends (blinkTimeout after it, or earlier
	// by stopBlink); blinkCheck is true while the blink's next step is
	// scheduled; dimmed while the cursor is dimmed.
	lastInput  time.Time
	blinkUntil time.Time
	blinkCheck bool
	dimmed     bool
	// parked stands in for Fyne's cursor animation while the composer
	// blinks the cursor itself: a Fyne animation never started, so the
	// entry's refreshes do not start Fyne's (they start one only when
	// there is none).
	parked *fyne.Animation
}

func newComposerEntry() *composerEntry {
	e := &composerEntry{}
	e.MultiLine = true
	e.Wrapping = fyne.TextWrapWord
	e.SetMinRowsVisible(3)
	e.SetPlaceHolder("Ask the agent…  (Enter sends, Shift+Enter adds a line)")
	e.ExtendBaseWidget(e)
	return e
}

// awake notes input: the cursor shows solid now, then blinks a step at a
// time until blinkTimeout after the last input.
func (e *composerEntry) awake() {
	if e.later == nil {
		return
	}
	e.lastInput = time.Now()
	e.blinkUntil = e.lastInput.Add(blinkTimeout)
	cursor := e.takeCursor()
	if cursor == nil {
		return // Fyne blinks it as it does
	}
	e.showCursor(cursor, false)
	if !e.blinkCheck {
		e.blinkCheck = true
		e.later(blinkStep, e.blink)
	}
}

// blink is the blink's next step: the cursor dimmed if it was shown, shown
// if it was dimmed; solid once blinkUntil has passed, with no step after.
// Within a step of input the cursor stays shown, as Fyne's does.
func (e *composerEntry) blink() {
	e.blinkCheck = false
	cursor := e.ownCursor()
	if cursor == nil {
		return // not focused any more: Fyne hid the cursor
	}
	now := time.Now()
	if !now.Before(e.blinkUntil) {
		e.showCursor(cursor, false)
		return
	}
	e.showCursor(cursor, !e.dimmed && now.Sub(e.lastInput) >= blinkStep)
	e.blinkCheck = true
	e.later(blinkStep, e.blink)
}

// stopBlink leaves the cursor solid now, unless the user typed, clicked or
// focused here in the last second (the blink then runs its course).
func (e *composerEntry) stopBlink() {
	if time.Since(e.lastInput) < time.Second {
		return
	}
	e.blinkUntil = time.Now()
	if cursor := e.ownCursor(); cursor != nil {
		e.showCursor(cursor, false)
	}
}

// showCursor shows the cursor in the theme's primary colour, or dimmed.
func (e *composerEntry) showCursor(cursor *canvas.Rectangle, dim bool) {
	c := e.Theme().Color(theme.ColorNamePrimary, fyne.CurrentApp().Settings().ThemeVariant())
	if dim {
		r, g, b, _ := c.RGBA()
		c = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: cursorDimAlpha}
	}
	if e.dimmed == dim && sameRGBA(cursor.FillColor, c) {
		return // nothing new to draw
	}
	e.dimmed = dim
	cursor.FillColor = c
	cursor.Refresh()
}

func sameRGBA(a, b color.Color) bool {
	if a == nil || b == nil {
		return a == b
	}
	r1, g1, b1, a1 := a.RGBA()
	r2, g2, b2, a2 := b.RGBA()
	return r1 == r2 && g1 == g2 && b1 == b2 && a1 == a2
}

// takeCursor stops Fyne's blink of the focused entry's cursor, if it runs,
// parking it (see parked), and returns the cursor; nil if the entry is not
// focused or Fyne's Entry does not hold its cursor as 2.7.1 does (the
// cursor then blinks as Fyne makes it, and TestComposerCursorBlinksInSteps
// says so).
func (e *composerEntry) takeCursor() *canvas.Rectangle {
	anim, cursor := cursorAnimation(&e.Entry)
	if anim == nil || cursor == nil || *anim == nil {
		return nil
	}
	if *anim != e.parked {
		(*anim).Stop()
		if e.parked == nil {
			e.parked = fyne.NewAnimation(time.Second, func(float32) {})
		}
		*anim = e.parked
	}
	return cursor
}

// ownCursor is the cursor while the composer blinks it: nil once Fyne took
// it back (the entry lost the focus and Fyne stopped the parked animation).
func (e *composerEntry) ownCursor() *canvas.Rectangle {
	anim, cursor := cursorAnimation(&e.Entry)
	if anim == nil || cursor == nil || e.parked == nil || *anim != e.parked {
		return nil
	}
	return cursor
}

// cursorAnimation finds the entry's cursor animation field and cursor, or
// nil if Fyne's Entry does not hold them as 2.7.1 does. Fyne 2.7.1 has no
// API for the blink: the animation and the cursor are unexported fields of
// Entry (cursorAnim *entryCursorAnimation, holding cursor
// *canvas.Rectangle and anim *fyne.Animation), reached here by reflection
// and checked by type. Fyne starts its animation on a refresh of the
// focused entry when the field is nil, and sets it to nil when the entry
// loses the focus.
func cursorAnimation(e *widget.Entry) (anim **fyne.Animation, cursor *canvas.Rectangle) {
	ca := reflect.ValueOf(e).Elem().FieldByName("cursorAnim")
	if !ca.IsValid() || ca.Kind() != reflect.Pointer || ca.IsNil() || ca.Elem().Kind() != reflect.Struct {
		return nil, nil
	}
	a := ca.Elem()
	af, cf := a.FieldByName("anim"), a.FieldByName("cursor")
	if !af.IsValid() || af.Type() != reflect.TypeFor[*fyne.Animation]() ||
		!cf.IsValid() || cf.Type() != reflect.TypeFor[*canvas.Rectangle]() {
		return nil, nil
	}
	anim = (**fyne.Animation)(unsafe.Pointer(af.UnsafeAddr()))
	cursor = *(**canvas.Rectangle)(unsafe.Pointer(cf.UnsafeAddr()))
	return anim, cursor
}

// setText replaces the text as the window does it (a sent prompt cleared, a
// failed one put back): it counts as input.
func (e *composerEntry) setText(text string) {
	e.Entry.SetText(text)
	e.awake()
}

func (e *composerEntry) FocusGained() {
	e.Entry.FocusGained()
	e.awake()
}

func (e *composerEntry) MouseDown(m *desktop.MouseEvent) {
	e.Entry.MouseDown(m)
	e.awake()
}

func (e *composerEntry) TypedRune(r rune) {
	e.Entry.TypedRune(r)
	e.awake()
}

func (e *composerEntry) KeyDown(k *fyne.KeyEvent) {
	e.awake()
	if k.Name == desktop.KeyShiftLeft || k.Name == desktop.KeyShiftRight {
		e.shift = true
	}
	e.Entry.KeyDown(k)
}

func (e *composerEntry) KeyUp(k *fyne.KeyEvent) {
	if k.Name == desktop.KeyShiftLeft || k.Name == desktop.KeyShiftRight {
		e.shift = false
	}
	e.Entry.KeyUp(k)
}

func (e *composerEntry) FocusLost() {
	e.shift = false
	e.Entry.FocusLost()
}

// AcceptsTab is false: Tab and Shift+Tab move the keyboard out of the
// prompt box to the window's other controls, as in a browser's text area
// they do not; Shift+Enter adds a line.
func (e *composerEntry) AcceptsTab() bool { return false }

func (e *composerEntry) TypedKey(k *fyne.KeyEvent) {
	e.awake()
	if e.onKey != nil && e.onKey(k) {
		return
	}
	switch k.Name {
	case fyne.KeyReturn, fyne.KeyEnter:
		if !e.shift && e.onEnter != nil {
			e.onEnter()
			return
		}
	case fyne.KeyEscape:
		if e.onEscape != nil {
			e.onEscape()
			return
		}
	}
	e.Entry.TypedKey(k)
}

func (e *composerEntry) TypedShortcut(s fyne.Shortcut) {
	e.awake()
	if e.onShortcut != nil && e.onShortcut(s) {
		return
	}
	e.Entry.TypedShortcut(s)
}
