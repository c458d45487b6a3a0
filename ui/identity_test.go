package ui

import (
	"context"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// deviceWindow opens another window on h's app (so with its preferences)
// connected to h's relay with token, as a window, and returns a harness
// that drives it.
func deviceWindow(t *testing.T, h *harness, token string) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := client.Config{URL: h.srv.URL, Token: token, Kind: protocol.ClientWindow}.Dial(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	w := NewWindow(h.app, c, Options{})
	w.Window().Show()
	dh := *h
	dh.client, dh.w, dh.proxy = c, w, nil
	t.Cleanup(func() {
		w.Close()
		c.Close()
		cancel()
		w.Wait()
		w.Window().Close()
	})
	dh.waitFor("the connection to go live", func() bool { return w.store.State().State == client.StateLive })
	return &dh
}

// A window connected with a device token knows its own device: its own
// prompt and answer are its own (no "Sent from"), another device's prompt
// is named by that device, not as "this device"; and after a restart (a
// new window and client on the same app, relay and token) the replayed
// history still shows its own as its own, before it has sent anything.
func TestWindowKnowsItsDevice(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	mk := func(name string) string {
		token, _, err := h.srv.Relay.CreateDevice(t.Context(), relay.NewDevice{Name: name, Role: protocol.RoleController})
		if err != nil {
			t.Fatal(err)
		}
		return token
	}
	pixel, tabletToken := mk("Pixel"), mk("tablet")

	pw := deviceWindow(t, h, pixel)
	pw.send("approve the migration")
	pw.waitModal(kindApproval)
	pw.typeRunes("a")
	pw.waitFor("the turn", func() bool { return pw.hasStatus(protocol.StatusCompleted) })
	id := pw.w.current

	tablet := relaytest.Dial(t, h.srv.URL+"?client=web", tabletToken)
	tablet.Send(protocol.TypeSend, map[string]any{"conversationId": id, "prompt": "from the tablet"})
	tablet.WaitFor(protocol.TypeIdle, nil)
	pw.waitFor("the tablet's prompt", func() bool {
		return strings.Contains(pw.dump(), "from the tablet") && pw.hasStatus(protocol.StatusCompleted)
	})
	check := func(who string, dh *harness) {
		t.Helper()
		d := dh.dump()
		if strings.Contains(d, "Pixel") || !strings.Contains(d, "Sent from tablet (web).") || !strings.Contains(d, `You answered`) {
			t.Fatalf("%s's transcript:\n%s", who, d)
		}
	}
	check("Pixel's window", pw)
	if n := strings.Count(pw.dump(), "Sent from"); n != 1 {
		t.Fatalf("Pixel's window names %d senders, want the tablet only:\n%s", n, pw.dump())
	}

	// The next start: another client and window, same relay and token.
	pw.w.Close()
	pw.client.Close()
	again := deviceWindow(t, h, pixel)
	again.waitFor("the conversation listed", func() bool { return again.w.store.OnRelay(id) })
	again.w.switchTo(id)
	again.waitFor("the replay", func() bool {
		return strings.Contains(again.dump(), "from the tablet") && again.hasStatus(protocol.StatusCompleted)
	})
	check("Pixel's window after a restart", again)
	if n := strings.Count(again.dump(), "Sent from"); n != 1 {
		t.Fatalf("after a restart Pixel's window names %d senders, want the tablet only:\n%s", n, again.dump())
	}
}
