package client_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
)

// A client learns who it is on the relay from the echo of what it sent:
// with the relay's own token it is the relay's own device from the start;
// with a device token it knows nothing until its first echo (a set_mode's
// mode_changed here), then its device and kind, and says so once to
// OnLearn. Another client's switch teaches it nothing, a refused message
// (a viewer's send) is not waited for. Key names the relay and the token
// without holding the token.
func TestIdentityFromEchoes(t *testing.T) {
	srv := startRelay(t)
	ctx := context.Background()
	mk := func(name, role string) string {
		token, _, err := srv.Relay.CreateDevice(ctx, relay.NewDevice{Name: name, Role: role})
		if err != nil {
			t.Fatal(err)
		}
		return token
	}
	pixel, phone := mk("Pixel", protocol.RoleController), mk("phone", protocol.RoleViewer)
	dial := func(token, kind string) *client.Client {
		c, err := client.Config{URL: srv.URL, Token: token, Kind: kind}.Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	own := dial(srv.Token, protocol.ClientWindow)
	if by, known := own.Identity().Self(); !known || by != (protocol.By{Device: protocol.OwnDevice, Client: protocol.ClientWindow}) {
		t.Fatalf("the relay's own token: %+v known %v", by, known)
	}

	c := dial(pixel, protocol.ClientTerminal)
	id := c.Identity()
	if _, known := id.Self(); known {
		t.Fatal("a device token's identity known before any echo")
	}
	var learned []protocol.By
	id.OnLearn(func(by protocol.By) { learned = append(learned, by) }) // the reader's goroutine; read after an event it delivered

	// Another device's switch, before ours: nothing to learn.
	other := dial(mk("tablet", protocol.RoleController), protocol.ClientWeb)
	if err := c.Subscribe(ctx, "conv", 0); err != nil {
		t.Fatal(err)
	}
	nextOf(t, c, protocol.TypeSubscribed)
	if err := other.SetMode(ctx, "conv", protocol.ModePlan); err != nil {
		t.Fatal(err)
	}
	nextOf(t, c, protocol.TypeModeChanged)
	if _, known := id.Self(); known {
		t.Fatal("learned from another device's switch")
	}

	if err := c.SetMode(ctx, "conv", protocol.ModeAct); err != nil {
		t.Fatal(err)
	}
	nextOf(t, c, protocol.TypeModeChanged)
	want := protocol.By{Device: "Pixel", Client: protocol.ClientTerminal}
	if by, known := id.Self(); !known || by != want || !id.Is(want) || id.Is(protocol.By{Device: "Pixel", Client: protocol.ClientWeb}) {
		t.Fatalf("after its own switch: %+v known %v", by, known)
	}
	// Its prompt's echo says the same: OnLearn heard once.
	if err := c.Send(ctx, "conv", "count", "", ""); err != nil {
		t.Fatal(err)
	}
	nextOf(t, c, protocol.TypeIdle)
	if len(learned) != 1 || learned[0] != want {
		t.Fatalf("OnLearn heard %+v", learned)
	}

	// A viewer's send is refused: the prompt is not waited for, so the
	// same prompt from a controller later teaches the viewer nothing.
	v := dial(phone, protocol.ClientWeb)
	if err := v.Subscribe(ctx, "conv", 0); err != nil {
		t.Fatal(err)
	}
	nextOf(t, v, protocol.TypeSubscribed)
	if err := v.Send(ctx, "conv", "count", "", ""); err != nil {
		t.Fatal(err)
	}
	if e := nextOf(t, v, protocol.TypeError).Data.(*protocol.Error); e.Code != protocol.CodeForbidden {
		t.Fatalf("the viewer's send: %+v", e)
	}
	if err := c.Send(ctx, "conv", "count", "", ""); err != nil {
		t.Fatal(err)
	}
	nextOf(t, v, protocol.TypeUserMessage)
	if by, known := v.Identity().Self(); known {
		t.Fatalf("the viewer learned %+v from Pixel's prompt", by)
	}

	// The key: per relay and token, without the token.
	keys := map[string]bool{own.Identity().Key(): true, id.Key(): true, v.Identity().Key(): true}
	if len(keys) != 3 {
		t.Fatalf("keys %v", keys)
	}
	again := dial(pixel, protocol.ClientTerminal)
	if again.Identity().Key() != id.Key() || strings.Contains(id.Key(), pixel) || strings.Contains(id.Key(), strings.TrimPrefix(pixel, client.DeviceTokenPrefix)) {
		t.Fatalf("key %q for the same relay and token (%q)", again.Identity().Key(), id.Key())
	}
	// Remembered from an earlier run until this run learns.
	again.Identity().Remember(want)
	if !again.Identity().Is(want) {
		t.Fatal("a remembered identity is not used")
	}
}
