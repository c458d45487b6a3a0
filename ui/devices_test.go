package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// The countdown is the relay's: the window's clock is a day behind the
// relay's (the harness's frozen clock), and the window has no timeout of
// its own, yet the modal counts down the relay's two minutes, and follows
// the window's clock from there.
func TestCountdownFollowsTheRelay(t *testing.T) {
	h := newHarness(t, harnessConfig{relay: relay.Config{InputTimeout: 2 * time.Minute}, fakeClock: true})
	if skew := time.Since(h.w.now()); skew < time.Hour {
		t.Fatalf("the test needs the window's clock far from the relay's (%s apart)", skew)
	}
	h.send("approve the migration")
	m := h.waitModal(kindApproval)
	if !strings.HasPrefix(m.countdown.Text, "Times out in 2:00;") || !strings.Contains(h.w.waitLabel.Text, "2:00 left") {
		t.Fatalf("countdown %q, indicator %q", m.countdown.Text, h.w.waitLabel.Text)
	}
	h.clock.advance(45 * time.Second)
	h.frame()
	if !strings.HasPrefix(m.countdown.Text, "Times out in 1:15;") {
		t.Fatalf("after 45 s: %q", m.countdown.Text)
	}
	h.typeRunes("a")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
}

// Who answered: another device's answer is named in the transcript; the
// window's own answer is "You answered", also for a window that starts
// anew on the same relay and replays it (the device is compared, not the
// window's memory).
func TestAnsweredFromAnotherDevice(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	token, _, err := h.srv.Relay.CreateDevice(t.Context(), relay.NewDevice{Name: "Pixel", Role: protocol.RoleController})
	if err != nil {
		t.Fatal(err)
	}
	phone := relaytest.Dial(t, h.srv.URL+"?client=web", token)
	h.send("approve the migration")
	h.waitModal(kindApproval)
	phone.Send(protocol.TypeSubscribe, map[string]any{"conversationId": h.w.current})
	req := phone.WaitFor(protocol.TypeSubscribed, nil)
	var sub protocol.Subscribed
	req.Decode(t, &sub)
	phone.Send(protocol.TypeUserInputResponse, map[string]any{"conversationId": h.w.current, "requestId": sub.PendingInput.RequestID, "answer": "approve"})
	h.waitFor("the modal to close", func() bool { return !h.modalOpen() })
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	if !strings.Contains(h.dump(), `"Run the migration?" was answered from Pixel (web).`) {
		t.Fatalf("transcript:\n%s", h.dump())
	}
}
