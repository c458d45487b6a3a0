package ui

import (
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
// click or focus; then it stays solid until the next one, as GTK's cursor
// does after its gtk-cursor-blink-timeout (10 s). Fyne redraws the whole
// window for every step of the blink, about eight frames a second, and that
// was nearly all of the idle window's CPU (docs/performance.md).
const blinkTimeout = 10 * time.Second

// composerEntry is the multi-line prompt box: Enter sends, Shift+Enter adds
// a line, Escape stops a running turn, and the window's shortcuts work while
// it has the focus.
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
	// blinkCheck is true while a check of the blink is scheduled.
	lastInput  time.Time
	blinkCheck bool
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

// awake notes input: the cursor blinks (Fyne restarts it on the entry's
// next refresh), and stops blinkTimeout after the last input.
func (e *composerEntry) awake() {
	if e.later == nil {
		return
	}
	e.lastInput = time.Now()
	if !e.blinkCheck {
		e.blinkCheck = true
		e.later(blinkTimeout, e.checkBlink)
	}
}

// checkBlink stops the blink once blinkTimeout has passed since the last
// input, or looks again when it will have.
func (e *composerEntry) checkBlink() {
	e.blinkCheck = false
	if left := blinkTimeout - time.Since(e.lastInput); left > 0 {
		e.blinkCheck = true
		e.later(left, e.checkBlink)
		return
	}
	stopCursorBlink(&e.Entry)
}

// stopBlink leaves the cursor solid now, unless the user typed, clicked or
// focused here in the last second (the blink then runs its course).
func (e *composerEntry) stopBlink() {
	if time.Since(e.lastInput) >= time.Second {
		stopCursorBlink(&e.Entry)
	}
}

// setText replaces the text as the window does it (a sent prompt cleared, a
// failed one put back): the refresh restarts the blink, so it counts as
// input.
func (e *composerEntry) setText(text string) {
	e.Entry.SetText(text)
	e.awake()
}

// stopCursorBlink stops a focused entry's cursor animation and leaves the
// cursor solid; false if it was not blinking. Fyne 2.7.1 has no API for
// it: the animation and the cursor are unexported fields of Entry
// (cursorAnim *entryCursorAnimation, holding cursor *canvas.Rectangle and
// anim *fyne.Animation), reached here by reflection and checked by type.
// With a Fyne that lays them out otherwise it does nothing, the cursor
// blinks as before, and TestComposerCursorStopsBlinking says so. The anim
// field is set to nil as Fyne's own stop does, so that the entry's next
// refresh while focused (a key, a click, focus) starts the blink again.
func stopCursorBlink(e *widget.Entry) bool {
	anim, cursor := cursorAnimation(e)
	if anim == nil || *anim == nil || cursor == nil {
		return false
	}
	(*anim).Stop()
	*anim = nil
	cursor.FillColor = e.Theme().Color(theme.ColorNamePrimary, fyne.CurrentApp().Settings().ThemeVariant())
	cursor.Refresh()
	return true
}

// cursorAnimation finds the entry's cursor animation field and cursor, or
// nil if Fyne's Entry does not hold them as 2.7.1 does.
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
