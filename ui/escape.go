package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// Escape cancels the window's own dialogs (New conversation, Settings,
// Connect a device…, the confirmations of a restore and of a delete), as
// their Cancel or Close does. Fyne 2.7.1
// dialogs take no key of their own, and a key goes to the widget that has
// the keyboard, or to the canvas when none has it: the canvas's Escape
// comes here (build.go), and the text boxes of the new-conversation
// dialog and of Settings, which have the keyboard when they open, hand
// their Escape on. (Settings' lists and checkboxes do not: Escape there
// does nothing, as before.)
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
	case w.settings != nil:
		w.settings.close()
	case w.share != nil:
		w.share.d.Hide()
	default:
		return false
	}
	return true
}

// escapeEntry is an Entry whose Escape calls onEscape (a password's when
// password: Fyne adds its reveal button as NewPasswordEntry does).
type escapeEntry struct {
	widget.Entry
	onEscape func()
}

func newEscapeEntry(password bool, onEscape func()) *escapeEntry {
	e := &escapeEntry{onEscape: onEscape}
	e.Password = password
	e.Wrapping = fyne.TextWrap(fyne.TextTruncateClip)
	e.ExtendBaseWidget(e)
	return e
}

// TypedKey hands Escape to onEscape, and every other key to the entry.
func (e *escapeEntry) TypedKey(k *fyne.KeyEvent) {
	if k.Name == fyne.KeyEscape && e.onEscape != nil {
		e.onEscape()
		return
	}
	e.Entry.TypedKey(k)
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
