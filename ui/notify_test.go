package ui

import (
	"testing"

	"fyne.io/fyne/v2"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/settings"
)

// When the window notifies of a turn's end (notify.go), and when not.

func TestShouldNotify(t *testing.T) {
	for _, c := range []struct {
		focused, enabled bool
		kind             notifyKind
		want             bool
	}{
		{false, true, notifyQuestion, true},
		{false, true, notifyTurnEnded, true},
		{false, true, notifyNone, false},
		{true, true, notifyQuestion, false},
		{true, true, notifyTurnEnded, false},
		{false, false, notifyQuestion, false},
		{false, false, notifyTurnEnded, false},
		{true, false, notifyTurnEnded, false},
	} {
		if got := shouldNotify(c.focused, c.enabled, c.kind); got != c.want {
			t.Errorf("shouldNotify(focused=%v, enabled=%v, kind=%d) = %v, want %v", c.focused, c.enabled, c.kind, got, c.want)
		}
	}
}

// TestLiveTracker: history replayed before copilot:subscribed notifies
// nothing; live events do; a reset makes the replay that follows quiet.
func TestLiveTracker(t *testing.T) {
	h := func(id string) protocol.Header { return protocol.Header{ConversationID: id, Seq: 1} }
	ask := func(id string) client.Event {
		return client.Event{Type: protocol.TypeUserInputRequest, Data: &protocol.UserInputRequest{Header: h(id), RequestID: "r", Question: "q?"}}
	}
	idle := func(id string) client.Event {
		return client.Event{Type: protocol.TypeIdle, Data: &protocol.Idle{Header: h(id), Status: protocol.StatusCompleted}}
	}
	subscribed := client.Event{Type: protocol.TypeSubscribed, Data: &protocol.Subscribed{ConversationID: "a"}}
	var lt liveTracker
	steps := []struct {
		ev   client.Event
		want notifyKind
	}{
		{ask("a"), notifyNone}, // replay
		{idle("a"), notifyNone},
		{subscribed, notifyNone},
		{ask("a"), notifyQuestion},
		{idle("a"), notifyTurnEnded},
		{idle("b"), notifyNone}, // never subscribed
		{client.Event{Type: client.TypeReset, Data: &client.Reset{ConversationID: "a"}}, notifyNone},
		{idle("a"), notifyNone}, // replayed again
		{subscribed, notifyNone},
		{idle("a"), notifyTurnEnded},
	}
	for i, s := range steps {
		if got := lt.observe(s.ev).kind; got != s.want {
			t.Fatalf("step %d (%s): kind %d, want %d", i, s.ev.Type, got, s.want)
		}
	}
}

// TestNotificationsForTurnEndsAndOff: a turn that ends while the window is
// in the background notifies; with notifications off nothing does; focus
// brings up the conversation of the latest notification.
func TestNotificationsForTurnEndsAndOff(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	lc := h.app.Lifecycle().(interface {
		OnEnteredForeground() func()
		OnExitedForeground() func()
	})
	h.send("show me markdown")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	first := h.w.current

	lc.OnExitedForeground()()
	h.loop.AssertNotificationSent(t, fyne.NewNotification("show me markdown", "The agent finished its turn."), func() {
		h.send("show me markdown again")
		h.waitFor("the second turn", func() bool { return statusRows(h) == 2 && h.hasStatus(protocol.StatusCompleted) })
	})
	// The user looked elsewhere meanwhile; focus comes back to the
	// conversation the notification was about.
	h.w.newConversation()
	lc.OnEnteredForeground()()
	if h.w.current != first {
		t.Fatal("focus did not bring up the notified conversation")
	}
	lc.OnEnteredForeground()() // once only
	if !h.w.notifier.focused || h.w.notifier.notifiedConv != "" {
		t.Fatal("focus state not updated")
	}

	h.app.Preferences().SetBool(settings.Lookup(settings.FieldNotifications).PrefKey(), false)
	lc.OnExitedForeground()()
	h.loop.AssertNotificationSent(t, nil, func() {
		h.send("approve the migration")
		h.waitModal(kindApproval)
		h.typeRunes("a")
		h.waitFor("the approved turn", func() bool { return !h.w.view.Streaming && h.hasStatus(protocol.StatusCompleted) })
	})
}
