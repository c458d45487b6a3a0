package ui

import (
	"fyne.io/fyne/v2"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
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

// notifier sends the window's desktop notifications and knows whether the
// window has the focus: a notification is for a person away from the
// window. It belongs to the UI goroutine.
type notifier struct {
	app fyne.App
	// title names a conversation as the list does.
	title   func(conv string) string
	focused bool
	// notified holds the request ids already notified: a question
	// replayed after a reconnect is not notified twice.
	notified map[string]bool
	// notifiedConv is the conversation of the latest notification sent
	// while the window was in the background; focus brings it up.
	notifiedConv string
}

func newNotifier(a fyne.App, title func(conv string) string) *notifier {
	return &notifier{app: a, title: title, focused: true, notified: map[string]bool{}}
}

// notificationsOn reads the setting at the moment of use, so that turning
// notifications off in Settings applies at once.
func (n *notifier) notificationsOn() bool {
	return settings.Load(n.app.Preferences(), settings.Defaults()).Notifications
}

// notify sends the notification for e if it should be sent.
func (n *notifier) notify(e notifyEvent) {
	if !shouldNotify(n.focused, n.notificationsOn(), e.kind) {
		return
	}
	if e.kind == notifyQuestion {
		if n.notified[e.requestID] {
			return
		}
		n.notified[e.requestID] = true
	}
	n.app.SendNotification(notification(e, n.title(e.conv)))
	n.notifiedConv = e.conv
}

// focusGained notes that the window has the focus, and returns the
// conversation of the latest notification sent while it had not, once
// ("" if none).
func (n *notifier) focusGained() string {
	n.focused = true
	id := n.notifiedConv
	n.notifiedConv = ""
	return id
}

func (n *notifier) focusLost() { n.focused = false }

// notification words e for the desktop, as the web page and the relay's
// pushes do (conversation.QuestionNotification, TurnNotification).
func notification(e notifyEvent, title string) *fyne.Notification {
	if e.kind == notifyQuestion {
		return fyne.NewNotification(conversation.QuestionNotification(title, e.question))
	}
	return fyne.NewNotification(conversation.TurnNotification(title, e.status, e.message))
}

// conversationTitle is the title the conversation list shows for id.
func (w *Window) conversationTitle(id string) string {
	for _, e := range w.sidebar.entries {
		if e.ID == id && e.Title != "" {
			return e.Title
		}
	}
	return conversation.EntryTitle("")
}

// focusGained runs when the app comes to the foreground: the window shows
// the conversation of the latest notification it sent while in the
// background.
func (w *Window) focusGained() {
	if id := w.notifier.focusGained(); id != "" && w.store.Has(id) {
		w.switchTo(id)
	}
}

func (w *Window) focusLost() { w.notifier.focusLost() }
