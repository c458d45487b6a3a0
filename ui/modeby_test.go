package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/theme"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
)

// The window's mode-change marker names the device that switched the
// conversation's mode from elsewhere (changedBy), against a real relay.
func TestModeChangeMarkerNamesTheDevice(t *testing.T) {
	h := newHarness(t, harnessConfig{theme: FixedVariant(theme.DefaultTheme(), theme.VariantLight), fakeClock: true})
	h.send("show me markdown")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	token, _, err := h.srv.Relay.CreateDevice(ctx, relay.NewDevice{Name: "zebra-phone", Role: protocol.RoleController})
	if err != nil {
		t.Fatal(err)
	}
	phone, err := client.Config{URL: h.srv.URL, Token: token, Kind: protocol.ClientWeb, MinBackoff: 10 * time.Millisecond}.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer phone.Close()
	go func() { // the phone's events are not this test's business
		for range phone.Events() {
		}
	}()
	if err := phone.SetMode(ctx, h.w.current, protocol.ModePlan); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the marker", func() bool { return h.lastRow(conversation.RowMode).Text != "" })
	if got := h.lastRow(conversation.RowMode).Text; !strings.HasPrefix(got, "Switched to Plan by zebra-phone (web): ") {
		t.Fatalf("marker %q", got)
	}
	if h.w.store.State().State != client.StateLive {
		t.Fatal("the window's connection dropped")
	}
	(&shooter{t: t, variant: "light"}).shot(h, "mode-by-device")
}
