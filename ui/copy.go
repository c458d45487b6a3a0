package ui

import (
	"strings"
	"time"

	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
)

// Copying to the clipboard: a code block, a reply, and the sign that it
// worked. Everything here runs on the UI goroutine.

// copyText puts s on the clipboard.
func (w *Window) copyText(s string) {
	w.app.Clipboard().SetContent(s)
}

// copiedFor is how long a Copy button says "Copied".
const copiedFor = 1500 * time.Millisecond

// sayCopied shows on b, a Copy button just pressed, that the text is on
// the clipboard, for copiedFor; then b reads as before.
func (w *Window) sayCopied(b *widget.Button) {
	text, icon := b.Text, b.Icon
	if text == "Copied" {
		return // pressed again while it says so
	}
	b.SetText("Copied")
	b.SetIcon(theme.ConfirmIcon())
	w.later(copiedFor, func() {
		if b.Text == "Copied" {
			b.SetText(text)
			b.SetIcon(icon)
		}
	})
}

// copyReplyBefore copies the assistant's text of the turn that ends at the
// status row idx.
func (w *Window) copyReplyBefore(idx int) {
	rows := w.transcript.rows
	if idx < 0 || idx >= len(rows) {
		return
	}
	if base := w.transcript.base; base > 0 {
		// The turn may begin above the rows the transcript holds.
		rows = append(w.store.Rows(w.current, 0, base), rows...)
		idx += base
	}
	var ids []string
	seen := map[string]bool{}
	for i := idx - 1; i >= 0 && rows[i].Kind != conversation.RowUser; i-- {
		r := rows[i]
		if (r.Kind == conversation.RowText || r.Kind == conversation.RowCode) && r.MessageID != "" && !seen[r.MessageID] {
			seen[r.MessageID] = true
			ids = append([]string{r.MessageID}, ids...)
		}
	}
	var parts []string
	for _, id := range ids {
		parts = append(parts, w.store.MessageText(w.current, id))
	}
	w.copyText(strings.Join(parts, "\n\n"))
}
