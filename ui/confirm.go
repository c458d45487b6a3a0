package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// confirmation is an open confirmation of something that cannot be taken
// back lightly (a restore, a delete): Cancel, and a danger button that
// does it. Tests read it.
type confirmation struct {
	dlg  *dialog.CustomDialog
	id   string // what it is about: the checkpoint (a restore), the conversation (a delete)
	text string // what it says
	ok   *escapeButton
}

// confirmAction shows c, titled title, with content: ok (label, icon)
// hides it and runs do. *open holds c while it shows; afterClose, if
// set, runs once it has closed, however.
func (w *Window) confirmAction(open **confirmation, c *confirmation, title string, content fyne.CanvasObject, label string, icon fyne.Resource, do, afterClose func()) {
	hide := func() { c.dlg.Hide() }
	cancel := newEscapeButton("Cancel", theme.CancelIcon(), hide, hide)
	c.ok = newEscapeButton(label, icon, func() {
		c.dlg.Hide()
		do()
	}, hide)
	c.ok.Importance = widget.DangerImportance
	c.dlg = dialog.NewCustomWithoutButtons(title, content, w.win)
	c.dlg.SetButtons([]fyne.CanvasObject{cancel, c.ok})
	c.dlg.SetOnClosed(func() {
		if *open == c {
			*open = nil
		}
		if afterClose != nil {
			afterClose()
		}
	})
	c.dlg.Resize(fyne.NewSize(min(560, w.win.Canvas().Size().Width-40), 0))
	*open = c
	c.dlg.Show()
}
