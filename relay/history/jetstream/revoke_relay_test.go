package jetstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// TestClusterRevokeClosesOnOtherRelay: two relays on one 3-node cluster,
// each with its own store and NATS connection (to different nodes). A
// device token made on relay A opens a connection on relay B; revoked on
// A, that connection on B is closed with 4003 within B's poll of the
// devices table (1 s by default), and B refuses the token from then on.
func TestClusterRevokeClosesOnOtherRelay(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	open := func(node int) *jetstream.Store {
		nc, err := c.Connect(node)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := jetstream.Open(ctx, nc, jetstream.Options{Replicas: 3})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	const own = "relay-token"
	a := relaytest.Start(t, relay.Config{Store: open(0), Token: own})
	b := relaytest.Start(t, relay.Config{Store: open(1), Token: own})

	token, _, err := a.Relay.CreateDevice(context.Background(), relay.NewDevice{Name: "Pixel", Role: protocol.RoleController})
	if err != nil {
		t.Fatal(err)
	}
	cl := relaytest.Dial(t, relaytest.WithToken(b.URL, token), "")
	cl.Send(protocol.TypePing, struct{}{})
	cl.Expect(protocol.TypePong)

	start := time.Now()
	if err := a.Relay.RevokeDevice(context.Background(), "Pixel"); err != nil {
		t.Fatal(err)
	}
	code, reason := cl.WaitClosed()
	if code != relay.CloseRevoked {
		t.Fatalf("relay B closed the revoked device's connection with %d %q, want 4003", code, reason)
	}
	if d := time.Since(start); d > relay.DefaultDevicePoll+2*time.Second {
		t.Fatalf("relay B closed it %s after the revocation on A", d)
	}
	if _, err := relaytest.DialConn(relaytest.WithToken(b.URL, token), ""); err == nil {
		t.Fatal("relay B let the revoked token in again")
	}
}
