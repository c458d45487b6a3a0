package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/theme"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
)

// TestRevokedTokenSaysSo: a window whose device token is revoked does not
// loop reconnecting: its connection pill says "token revoked" and the
// status bar says what happened and what to do, and it stays so.
func TestRevokedTokenSaysSo(t *testing.T) {
	h := newHarness(t, harnessConfig{theme: FixedVariant(theme.DefaultTheme(), theme.VariantLight), fakeClock: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	token, _, err := h.srv.Relay.CreateDevice(ctx, relay.NewDevice{Name: "laptop", Role: protocol.RoleController})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Config{URL: h.srv.URL, Token: token, Kind: protocol.ClientWindow, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h.w.SetClient(c, h.w.opts)
	h.waitFor("live on the device's token", func() bool { return h.w.store.State().State == client.StateLive })
	if err := h.srv.Relay.RevokeDevice(ctx, "laptop"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the revocation shown", func() bool { return h.w.status.conn.Text == "token revoked" })
	if !h.w.status.notice.Visible() || !strings.Contains(h.w.status.notice.Text, "token was revoked or expired; ask for a new one") {
		t.Fatalf("notice %q (visible %v)", h.w.status.notice.Text, h.w.status.notice.Visible())
	}
	time.Sleep(100 * time.Millisecond) // ten backoffs' worth: nothing reconnects
	h.frame()
	if st := h.w.store.State(); st.State != client.StateClosed || h.w.status.conn.Text != "token revoked" {
		t.Fatalf("after a while: %+v, pill %q", st, h.w.status.conn.Text)
	}
	h.w.dismissNotice(relayNoticeID) // SetClient's "relay restarted", not this test's business
	(&shooter{t: t, variant: "light"}).shot(h, "revoked")
}
