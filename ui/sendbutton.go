package ui

import (
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// sendButton is the composer's Send button, which is Stop while a turn
// runs: one button, so that the place the user clicks to send is where
// they click to stop. It keeps what it shows, to touch the widget only on
// change. It belongs to the UI goroutine.
type sendButton struct {
	*widget.Button
	// streaming is what the button shows: Stop (true) or Send (false);
	// nil before the first frame.
	streaming *bool
}

// newSendButton returns Send, which calls tapped (the window tells a send
// from a stop).
func newSendButton(tapped func()) *sendButton {
	b := &sendButton{Button: widget.NewButtonWithIcon("Send", theme.MailSendIcon(), tapped)}
	b.Importance = widget.HighImportance
	return b
}

// show turns Send into Stop while a turn runs, and back; it reports
// whether that changed.
func (b *sendButton) show(streaming bool) bool {
	if b.streaming != nil && *b.streaming == streaming {
		return false
	}
	b.streaming = &streaming
	if streaming {
		b.SetText("Stop")
		b.SetIcon(theme.MediaStopIcon())
		b.Importance = widget.DangerImportance
	} else {
		b.SetText("Send")
		b.SetIcon(theme.MailSendIcon())
		b.Importance = widget.HighImportance
	}
	b.Refresh()
	return true
}
