package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// Escape cancels the window's own dialogs (New conversation, Settings,
// Connect a device…, the confirmations of a restore and of a delete,
// About), as their Cancel or Close does. Fyne 2.7.1 dialogs take no key
// of their own, and a key goes to the widget that has
// the keyboard, or to the canvas when none has it: the canvas's Escape
// comes here (build.go), and every widget of theirs that takes the
// keyboard hands its Escape on: the dialogs build their text boxes,
// dropdowns, checkboxes and buttons with the wrappers below (Tab moves the
// keyboard to a dropdown or a button, where Escape did nothing).
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
	case w.about != nil:
		w.about.Hide()
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

// escaped hands Escape to onEscape, and reports whether it did: each
// wrapper's TypedKey gives any other key to its widget.
func escaped(k *fyne.KeyEvent, onEscape func()) bool {
	if k.Name != fyne.KeyEscape || onEscape == nil {
		return false
	}
	onEscape()
	return true
}

// TypedKey hands Escape to onEscape, and every other key to the entry.
func (e *escapeEntry) TypedKey(k *fyne.KeyEvent) {
	if !escaped(k, e.onEscape) {
		e.Entry.TypedKey(k)
	}
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
	// Its menu's button takes the keyboard too (Tab stops there): the
	// entry makes it in its first SetOptions, and keeps it after.
	e.SetOptions(nil)
	if b, ok := e.ActionItem.(*widget.Button); ok {
		menu := newEscapeButton("", b.Icon, b.OnTapped, onEscape)
		menu.Importance = b.Importance
		e.ActionItem = menu
	}
	return e
}

// TypedKey hands Escape to onEscape, and every other key to the entry.
func (e *escapeSelectEntry) TypedKey(k *fyne.KeyEvent) {
	if !escaped(k, e.onEscape) {
		e.SelectEntry.TypedKey(k)
	}
}

// escapeSelect is a Select (a dropdown) whose Escape calls onEscape.
type escapeSelect struct {
	widget.Select
	onEscape func()
}

func newEscapeSelect(options []string, changed func(string), onEscape func()) *escapeSelect {
	s := &escapeSelect{onEscape: onEscape}
	s.Options, s.OnChanged = options, changed
	s.PlaceHolder = "(Select one)" // widget.NewSelect's
	s.ExtendBaseWidget(s)
	return s
}

// TypedKey hands Escape to onEscape, and every other key to the dropdown.
func (s *escapeSelect) TypedKey(k *fyne.KeyEvent) {
	if !escaped(k, s.onEscape) {
		s.Select.TypedKey(k)
	}
}

// escapeCheck is a Check whose Escape calls onEscape.
type escapeCheck struct {
	widget.Check
	onEscape func()
}

func newEscapeCheck(label string, onEscape func()) *escapeCheck {
	c := &escapeCheck{onEscape: onEscape}
	c.Text = label
	c.ExtendBaseWidget(c)
	return c
}

// TypedKey hands Escape to onEscape, and every other key to the box.
func (c *escapeCheck) TypedKey(k *fyne.KeyEvent) {
	if !escaped(k, c.onEscape) {
		c.Check.TypedKey(k)
	}
}

// escapeButton is a Button whose Escape calls onEscape.
type escapeButton struct {
	widget.Button
	onEscape func()
}

func newEscapeButton(label string, icon fyne.Resource, tapped, onEscape func()) *escapeButton {
	b := &escapeButton{onEscape: onEscape}
	b.Text, b.Icon, b.OnTapped = label, icon, tapped
	b.ExtendBaseWidget(b)
	return b
}

// TypedKey hands Escape to onEscape, and every other key to the button.
func (b *escapeButton) TypedKey(k *fyne.KeyEvent) {
	if !escaped(k, b.onEscape) {
		b.Button.TypedKey(k)
	}
}
