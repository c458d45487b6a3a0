package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// Tab moves the keyboard through a transcript row's buttons and
// checkboxes as it does through its links. A part that gains focus in a
// row the view cuts is scrolled into view (transcript.reveal), as a link
// is (linkStop.FocusGained): otherwise the focus outline is drawn where
// nobody sees it, and Space presses a button the user cannot read.

// rowButton is a button of a transcript row.
type rowButton struct {
	widget.Button
	t *transcript
}

// newButton makes a button for a row of t.
func (t *transcript) newButton(label string, icon fyne.Resource, tapped func()) *rowButton {
	b := &rowButton{t: t}
	b.Text, b.Icon, b.OnTapped = label, icon, tapped
	b.ExtendBaseWidget(b)
	return b
}

// TypedKey takes the window's page keys and F10 (Window.typedKey), and
// gives the rest to the button (Space presses it).
func (b *rowButton) TypedKey(k *fyne.KeyEvent) {
	if !b.t.win.typedKey(k, false) {
		b.Button.TypedKey(k)
	}
}

func (b *rowButton) FocusGained() {
	b.Button.FocusGained()
	b.t.reveal(b)
}

// rowCheck is a checkbox of a transcript row (a plan's step).
type rowCheck struct {
	widget.Check
	t *transcript
}

// newCheck makes a checkbox for a row of t.
func (t *transcript) newCheck(label string, changed func(bool)) *rowCheck {
	c := &rowCheck{t: t}
	c.Text, c.OnChanged = label, changed
	c.ExtendBaseWidget(c)
	return c
}

// TypedKey takes the window's page keys and F10 (Window.typedKey), and
// gives the rest to the checkbox (Space ticks it).
func (c *rowCheck) TypedKey(k *fyne.KeyEvent) {
	if !c.t.win.typedKey(k, false) {
		c.Check.TypedKey(k)
	}
}

func (c *rowCheck) FocusGained() {
	c.Check.FocusGained()
	c.t.reveal(c)
}

// Tapped ticks or unticks the box as a click does, and gives the keyboard
// back to the composer, which a Fyne checkbox takes on a click. Space on
// a box Tab reached ticks it and leaves the focus there, so that Tab goes
// on to the next step.
func (c *rowCheck) Tapped(e *fyne.PointEvent) {
	c.Check.Tapped(e)
	c.t.win.focusComposer()
}
