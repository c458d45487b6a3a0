package ui

import (
	"fyne.io/fyne/v2"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/settings"
)

// Desktop notifications: when the agent asks a question or a turn ends
// while the window is not focused, the window tells the desktop.
//
// Clicking a notification cannot bring the window to that conversation:
// Fyne 2.7.1's App.SendNotification takes a Notification with only a Title
// and a Content, returns nothing and reports no click (the Linux driver
// sends the D-Bus Notify call with no actions; macOS and Windows likewise
// register no callback). So the window does the next best thing: when it
// regains focus, it switches to the conversation the latest notification
// was about.

// notifyKind is what an event would notify about.
type notifyKind int

const (
	notifyNone      notifyKind = iota
	notifyQuestion             // the agent asks something and waits
	notifyTurnEnded            // a turn ended: completed, failed, stopped or rejected
)

// shouldNotify decides whether an event becomes a desktop notification:
// only one a person waits for, only while the window is not focused, and
// never when notifications are off.
func shouldNotify(focused, enabled bool, kind notifyKind) bool {
	return kind != notifyNone && enabled && !focused
}

// notifyEvent is an event worth a notification, as the client's goroutine
// saw it.
type notifyEvent struct {
	kind      notifyKind
	conv      string
	requestID string // notifyQuestion
	question  string // notifyQuestion
	status    string // notifyTurnEnded: a protocol.Status*
	message   string // notifyTurnEnded: why it failed
}

// liveTracker tells live events from replayed history: a conversation's
// events are live once its copilot:subscribed arrived (the relay replays
// the history before it), until the client resets it. It belongs to the
// window's pump goroutine.
type liveTracker struct {
	live map[string]bool
}

// observe returns what ev would notify about.
func (t *liveTracker) observe(ev client.Event) notifyEvent {
	if t.live == nil {
		t.live = map[string]bool{}
	}
	switch d := ev.Data.(type) {
	case *protocol.Subscribed:
		t.live[d.ConversationID] = true
	case *client.Reset:
		t.live[d.ConversationID] = false
	case *protocol.Deleted:
		delete(t.live, d.ConversationID)
	case *protocol.UserInputRequest:
		if t.live[d.ConversationID] {
			return notifyEvent{kind: notifyQuestion, conv: d.ConversationID, requestID: d.RequestID, question: d.Question}
		}
	case *protocol.Idle:
		if t.live[d.ConversationID] {
			return notifyEvent{kind: notifyTurnEnded, conv: d.ConversationID, status: d.Status, message: d.Message}
		}
	}
	return notifyEvent{}
}

// notificationsOn reads the setting at the moment of use, so that turning
// notifications off in Settings applies at once.
func (w *Window) notificationsOn() bool {
	return settings.Load(w.app.Preferences(), settings.Defaults()).Notifications
}

// notify sends the notification for e if it should be sent. It runs on the
// UI goroutine, where the focus is known.
func (w *Window) notify(e notifyEvent) {
	if !shouldNotify(w.focused, w.notificationsOn(), e.kind) {
		return
	}
	if e.kind == notifyQuestion {
		if w.notified[e.requestID] {
			return
		}
		w.notified[e.requestID] = true
	}
	w.app.SendNotification(notification(e, w.conversationTitle(e.conv)))
	w.notifiedConv = e.conv
}

// notification words e for the desktop.
func notification(e notifyEvent, title string) *fyne.Notification {
	if e.kind == notifyQuestion {
		return fyne.NewNotification("pilotdesk: the agent is asking", e.question)
	}
	switch e.status {
	case protocol.StatusCompleted:
		return fyne.NewNotification("pilotdesk: the agent finished", title)
	case protocol.StatusAborted:
		return fyne.NewNotification("pilotdesk: the turn was stopped", title)
	case protocol.StatusRejected:
		return fyne.NewNotification("pilotdesk: the turn was rejected", title)
	case protocol.StatusError:
		if e.message != "" {
			return fyne.NewNotification("pilotdesk: the turn failed", title+": "+e.message)
		}
		return fyne.NewNotification("pilotdesk: the turn failed", title)
	}
	return fyne.NewNotification("pilotdesk: the turn ended ("+e.status+")", title)
}

// conversationTitle is the title the conversation list shows for id.
func (w *Window) conversationTitle(id string) string {
	for _, e := range w.sidebar.entries {
		if e.ID == id && e.Title != "" {
			return e.Title
		}
	}
	return "New conversation"
}

// focusGained runs when the app comes to the foreground: the window shows
// the conversation of the latest notification it sent while in the
// background.
func (w *Window) focusGained() {
	w.focused = true
	if id := w.notifiedConv; id != "" {
		w.notifiedConv = ""
		if w.store.Has(id) {
			w.switchTo(id)
		}
	}
}

func (w *Window) focusLost() { w.focused = false }
