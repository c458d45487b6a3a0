package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/widget"
)

// composerEntry is the multi-line prompt box: Enter sends, Shift+Enter adds
// a line, Escape stops a running turn, and the window's shortcuts work while
// it has the focus.
type composerEntry struct {
	widget.Entry
	onEnter    func()
	onEscape   func()
	onShortcut func(fyne.Shortcut) bool
	shift      bool
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

func (e *composerEntry) KeyDown(k *fyne.KeyEvent) {
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

func (e *composerEntry) TypedKey(k *fyne.KeyEvent) {
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
	if e.onShortcut != nil && e.onShortcut(s) {
		return
	}
	e.Entry.TypedShortcut(s)
}
