package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// build makes the window's widgets, its menu and its shortcuts; NewWindow
// sets root as the window's content once they hold their first text.
func (w *Window) build() {
	w.transcript = newTranscript(w)
	w.sidebar = newSidebar(w)
	w.status = newStatusBar()

	w.title = widget.NewLabelWithStyle("New conversation", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	w.title.Truncation = fyne.TextTruncateEllipsis

	w.composer = newComposerEntry()
	w.composer.onEnter = w.submit
	w.composer.onEscape = w.stop
	w.composer.onShortcut = w.shortcut
	w.composer.onKey = func(k *fyne.KeyEvent) bool { return w.typedKey(k, true) }
	w.composer.later = w.later
	w.sendBtn = newSendButton(w.sendOrStop)
	w.mode = newModeSwitch(w.modeToggled)
	w.budget = &budgetGuard{status: w.status, note: func(tone, text string) { w.store.AddNote(w.current, tone, text) }}

	w.wait = newWaitIndicator(w.later)

	controls := container.NewVBox(w.mode.toggle, w.sendBtn.Button)
	w.composerRow = container.NewBorder(nil, nil, nil, controls, w.composer)
	// An open question takes the prompt box's place (questionLayer).
	w.questionSlot = canvas.NewRectangle(color.Transparent)
	w.questionSlot.Hide()
	w.bottomBox = container.NewVBox(w.wait.box, w.mode.banner, w.composerRow, w.questionSlot)
	bottom := w.bottomBox
	w.noticeSlot = container.NewVBox()
	w.noticeSlot.Hide()
	header := container.NewVBox(container.NewPadded(w.title), widget.NewSeparator(), w.noticeSlot)
	w.chat = container.NewBorder(header, container.NewPadded(bottom), nil, nil, w.transcript.root)

	split := container.NewHSplit(w.sidebar.root, w.chat)
	split.Offset = 0.24
	// The window shrinks no further than where the status words and the
	// composer's buttons still fit on their lines.
	w.root = container.New(minSizeLayout{minWindowSize}, container.NewBorder(nil, w.status.root, nil, nil, split))
	w.win.SetMainMenu(w.mainMenu())

	c := w.win.Canvas()
	for _, s := range shortcuts() {
		s := s
		c.AddShortcut(s, func(fyne.Shortcut) { w.shortcut(s) })
	}
	// With the modal open, keys that reach the canvas go to it, so that a
	// click on the dimmed window does not leave the keyboard dead.
	c.SetOnTypedRune(func(r rune) {
		if w.modal != nil {
			w.modal.typedRune(r)
		}
	})
	c.SetOnTypedKey(func(k *fyne.KeyEvent) {
		if w.modal != nil {
			w.modal.typedKey(k)
			return
		}
		if k.Name == fyne.KeyEscape && w.cancelDialog() {
			return
		}
		w.typedKey(k, false)
	})
}
