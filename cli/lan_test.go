package cli

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/settings"
)

// "Reachable from my network": the embedded relay listens on every
// address with TLS and a certificate of its own, made once in the data dir
// (the same fingerprint on the next start); the window's client pins it,
// a client that does not trust it is refused; the Share dialog gets the
// LAN address and the fingerprint. Without a data dir it is refused.
func TestLANRelayHasItsOwnTLS(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cf := clientFlags{}
	cf.relay.Settings = settings.Defaults()
	cf.relay.Agent, cf.relay.LAN, cf.relay.DataDir = settings.AgentDemo, true, dir
	cf.relay.HeartbeatTimeout = time.Minute
	ctx := context.Background()
	tgt, stop, err := cf.startTarget(ctx, logger)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tgt.URL, "wss://127.0.0.1:") || len(tgt.Fingerprint) != 64 {
		t.Fatalf("target %+v", tgt)
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := client.Config{URL: tgt.URL, Token: tgt.Token, HTTPClient: pinnedClient(tgt.Fingerprint)}.Dial(dctx)
	if err != nil {
		t.Fatalf("the pinned client: %v", err)
	}
	c.Close()
	if _, err := (client.Config{URL: tgt.URL, Token: tgt.Token}).Dial(dctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client that does not trust the certificate: %v", err)
	}
	if _, err := (client.Config{URL: tgt.URL, Token: tgt.Token, HTTPClient: pinnedClient(strings.Repeat("0", 64))}).Dial(dctx); err == nil {
		t.Fatal("a client pinning another certificate connected")
	}
	r, err := readRunning(dir)
	if err != nil || r.Fingerprint != tgt.Fingerprint || (tgt.lan != "" && r.LAN != tgt.lan) {
		t.Fatalf("running file %+v, %v", r, err)
	}
	share := newWindowDevices(tgt).Share()
	if tgt.lan != "" && (!share.LAN || !strings.HasPrefix(share.URL, "wss://") || !strings.Contains(share.Fingerprint, ":")) {
		t.Fatalf("share %+v", share)
	}
	stop()

	again, stop2, err := cf.startTarget(ctx, logger)
	if err != nil {
		t.Fatal(err)
	}
	stop2()
	if again.Fingerprint != tgt.Fingerprint {
		t.Fatal("the certificate changed between two starts")
	}
	cf.relay.DataDir = memoryDataDir
	if _, _, err := cf.startTarget(ctx, logger); err == nil {
		t.Fatal("a relay on the network without a data dir for its certificate")
	}
}

// The relay on the network keeps its port across restarts (the data dir
// remembers it), so a paired phone's link keeps working; a port another
// program took meanwhile is given up for a new one, which is remembered
// in its turn.
func TestLANRelayKeepsItsPort(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cf := clientFlags{}
	cf.relay.Settings = settings.Defaults()
	cf.relay.Agent, cf.relay.LAN, cf.relay.DataDir = settings.AgentDemo, true, dir
	cf.relay.HeartbeatTimeout = time.Minute
	ctx := context.Background()
	port := func() string {
		t.Helper()
		tgt, stop, err := cf.startTarget(ctx, logger)
		if err != nil {
			t.Fatal(err)
		}
		stop()
		_, p, err := net.SplitHostPort(hostOf(tgt.URL))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := port()
	if again := port(); again != first {
		t.Fatalf("the port changed from %s to %s across a restart", first, again)
	}
	taken, err := net.Listen("tcp", "0.0.0.0:"+first)
	if err != nil {
		t.Fatal(err)
	}
	other := port()
	taken.Close()
	if other == first {
		t.Fatal("started on a port another program holds")
	}
	if next := port(); next != other {
		t.Fatalf("the new port %s was not remembered: %s", other, next)
	}
}
