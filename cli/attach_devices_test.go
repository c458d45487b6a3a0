package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// A window attached to the relay another process runs on its data dir
// (here `pilotdesk serve`) has a "Connect a device…" dialog too: it makes
// a token that works on that relay at once, lists the device, and revokes
// it, which closes the device's connection (the client stops with
// ErrRevoked). A remote relay's window has none.
func TestAttachedWindowManagesDevices(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	_, addr, _ := startServe(t, "--listen", "127.0.0.1:0", "--agent", "script", "--data-dir", dir, "--token", "the-owner-token")

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cf := demoFlags(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tgt, stop, err := cf.startTarget(ctx, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if tgt.Attached == "" || tgt.Embedded {
		t.Fatalf("not attached: %+v", tgt)
	}
	devs := newWindowDevices(tgt)
	if devs == nil {
		t.Fatal("an attached window has no Connect a device… dialog")
	}
	if got := devs.Share(); got.URL != "ws://"+addr+"/ws" || got.LAN {
		t.Fatalf("share %+v", got)
	}
	token, err := devs.CreateDevice(ctx, "Pixel", protocol.RoleController, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Config{URL: "ws://" + addr + "/ws", Token: token, Kind: protocol.ClientWeb, MinBackoff: 10 * time.Millisecond}.Dial(ctx)
	if err != nil {
		t.Fatalf("the token the attached window made: %v", err)
	}
	defer c.Close()
	list, err := devs.Devices(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "Pixel" || list[0].Role != protocol.RoleController {
		t.Fatalf("devices %+v, %v", list, err)
	}
	if err := devs.RevokeDevice(ctx, "Pixel"); err != nil {
		t.Fatal(err)
	}
	for ev := range c.Events() {
		if sc, ok := ev.Data.(*client.StateChange); ok && sc.State == client.StateClosed {
			if !errors.Is(sc.Err, client.ErrRevoked) {
				t.Fatalf("closed with %v", sc.Err)
			}
			break
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the revoked device's connection stayed open")
	}

	if newWindowDevices(target{URL: "wss://relay.example:7420/ws", Token: "x"}) != nil {
		t.Fatal("a remote relay's window offers the dialog")
	}
}
