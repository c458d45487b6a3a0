package ui

import (
	"strings"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// A window starts in a new, empty conversation, the one it can show at
// once. With Options.Reopen, once the relay's first list comes, it goes
// back where the user was: the conversation it showed last
// (Options.LastShown), if the relay lists it, else the latest one. A
// relay with no conversation (a fresh data dir) leaves the new one and
// its first-run greeting. `pilotdesk chat` attached to the app chooses
// the same way: the conversation the window shows, else the latest.

// startReopen notes that the window waits for its first list to go back
// where the user was, from the conversation it shows now; it runs when the
// window gets its first client.
func (w *Window) startReopen() {
	if w.opts.Reopen {
		w.reopenFrom = w.current
	}
}

// reopen goes back where the user was, on the relay's first list l, unless
// the user moved on meanwhile: opened or started another conversation,
// sent a prompt, or typed one. It runs once, on the UI goroutine.
func (w *Window) reopen(l *protocol.Conversations) {
	from := w.reopenFrom
	if from == "" {
		return
	}
	w.reopenFrom = ""
	if w.current != from || w.subscribed[from] || strings.TrimSpace(w.composer.Text) != "" ||
		len(w.store.Transcript(from)) > 0 || len(l.Conversations) == 0 {
		return
	}
	id := l.Conversations[0].ConversationID // the list is newest first
	for _, c := range l.Conversations {
		if c.ConversationID == w.opts.LastShown {
			id = c.ConversationID
			break
		}
	}
	w.switchTo(id)
}
