package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// Escape cancels the window's own dialogs (New conversation, the
// confirmations of a restore and of a delete), as Cancel does. Fyne 2.7.1
// dialogs take no key of their own, and a key goes to the widget that has
// the keyboard, or to the canvas when none has it: the canvas's Escape
// comes here (build.go), and the new-conversation dialog's folder box,
// which has the keyboard while the dialog is open, hands its Escape on.
// The agent's question is not one of them: Escape never closes it
// (modal.go).

// cancelDialog hides the dialog of the window's own that is open, and
// reports whether there was one.
func (w *Window) cancelDialog() bool {
	switch {
	case w.deleting != nil:
		w.deleting.dlg.Hide()
	case w.restoring != nil:
		w.restoring.dlg.Hide()
	case w.newConv != nil:
		w.newConv.dlg.Hide()
	default:
		return false
	}
	return true
}

// escapeSelectEntry is a SelectEntry whose Escape calls onEscape.
type escapeSelectEntry struct {
	widget.SelectEntry
	onEscape func()
}

func newEscapeSelectEntry(onEscape func()) *escapeSelectEntry {
	e := &escapeSelectEntry{onEscape: onEscape}
	e.ExtendBaseWidget(e)
	e.Wrapping = fyne.TextWrap(fyne.TextTruncateClip)
	return e
}

// TypedKey hands Escape to onEscape, and every other key to the entry.
func (e *escapeSelectEntry) TypedKey(k *fyne.KeyEvent) {
	if k.Name == fyne.KeyEscape && e.onEscape != nil {
		e.onEscape()
		return
	}
	e.SelectEntry.TypedKey(k)
}
