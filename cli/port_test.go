package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
	"github.com/pilotdesk/pilotdesk/settings"
)

// TestEmbeddedRelayKeepsItsPort: the embedded relay on the loopback keeps
// its port across restarts of the app (the data dir's local-port), so a
// browser's saved link, which carries the port and a device token, comes
// back by itself: a client that knows only that URL reconnects to the new
// relay without being told anything. A port another program took
// meanwhile is given up for a new one, which is remembered in its turn.
func TestEmbeddedRelayKeepsItsPort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cf := demoFlags(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := func() (target, func()) {
		t.Helper()
		tgt, stop, err := cf.startTarget(ctx, logger)
		if err != nil {
			t.Fatal(err)
		}
		return tgt, stop
	}
	first, stop := start()
	token, _, err := first.relay.CreateDevice(ctx, relay.NewDevice{Name: "phone", Role: "controller"})
	if err != nil {
		t.Fatal(err)
	}
	phone, err := client.Config{URL: first.URL, Token: token, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer phone.Close()
	states := watchStates(phone)
	stop()

	again, stop := start()
	if again.URL != first.URL {
		t.Fatalf("the relay moved from %s to %s across a restart", first.URL, again.URL)
	}
	waitBackLive(t, states)
	phone.Close()
	stop()

	_, port, err := net.SplitHostPort(hostOf(first.URL))
	if err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	other, stop := start()
	stop()
	taken.Close()
	if other.URL == first.URL {
		t.Fatal("started on a port another program holds")
	}
	next, stop := start()
	stop()
	if next.URL != other.URL {
		t.Fatalf("the new address %s was not remembered: %s", other.URL, next.URL)
	}
}

// TestApplyKeepsThePort: Settings → Apply restarts the window's embedded
// relay on the port it had, so a client that knows only its URL (a phone's
// page, a saved link) comes back by itself and goes on.
func TestApplyKeepsThePort(t *testing.T) {
	a := newPrefsApp(t, testAppID())
	start := settings.Defaults()
	start.Agent = settings.AgentDemo
	settings.Save(a.Preferences(), start)
	td, err := openTestDesktop(t, a, "--data-dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first := td.d.cur
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	page, err := client.Config{URL: first.target.URL, Token: first.target.Token,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer page.Close()
	states := watchStates(page)

	next := start
	next.InputTimeout = 2 * time.Minute
	second := td.applyRestarts(next)
	if second.target.URL != first.target.URL {
		t.Fatalf("Apply moved the relay from %s to %s", first.target.URL, second.target.URL)
	}
	waitBackLive(t, states)
}

// TestAttachingDoesNotWarnOfATakenPort: a second pilotdesk on the data
// dir (a `pilotdesk chat` while the window runs) finds the remembered port
// held by the window's relay and attaches to that relay, on that port; it
// must not log that the port was taken and a new one used ("saved links
// and paired devices need the new link"), which `pilotdesk chat` printed
// as a warning on its first lines although nothing moved.
func TestAttachingDoesNotWarnOfATakenPort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cf := demoFlags(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	first, stop, err := cf.startTarget(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var log lockedBuffer
	second, stopSecond, err := cf.startTarget(ctx, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	stopSecond()
	if second.Attached == "" || second.URL != first.URL {
		t.Fatalf("the second start did not attach to %s: %+v", first.URL, second)
	}
	if strings.Contains(log.String(), "port is taken") {
		t.Fatalf("attaching warned of a taken port:\n%s", log.String())
	}
}

// demoFlags are the flags of a pilotdesk on the data dir dir that runs the
// built-in demo, with a minute's heartbeat so that a slow test machine
// does not see its clients as gone.
func demoFlags(dir string) clientFlags {
	cf := clientFlags{}
	cf.relay.Settings = settings.Defaults()
	cf.relay.Agent, cf.relay.DataDir = settings.AgentDemo, dir
	cf.relay.HeartbeatTimeout = time.Minute
	return cf
}

// lockedBuffer is a log's destination that a test reads while the
// logger may still write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestWindowAttachesToAnEmbeddedNATSRelay: a second pilotdesk started with
// --nats embedded on the data dir whose node a running relay holds
// attaches to that relay, as it does on SQLite, where it failed with
// "opening the NATS node … in use by another pilotdesk". Its devices
// dialog says where the tokens are made rather than writing them into
// the data dir's SQLite table, which that relay does not read.
func TestWindowAttachesToAnEmbeddedNATSRelay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cf := demoFlags(dir)
	cf.relay.NATS = natsSettings{URLs: natsEmbedded, Replicas: 1, Streams: 1, Lease: 15 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	first, stop, err := cf.startTarget(ctx, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	second, stopSecond, err := cf.startTarget(ctx, logger)
	if err != nil {
		t.Fatalf("a second start on the held node: %v", err)
	}
	defer stopSecond()
	if second.Attached == "" || second.Embedded || second.URL != first.URL {
		t.Fatalf("the second start did not attach to %s: %+v", first.URL, second)
	}
	devs := newWindowDevices(second)
	if devs == nil {
		t.Fatal("the attached window has no devices dialog")
	}
	if _, err := devs.CreateDevice(ctx, "Pixel", protocol.RoleController, time.Time{}); err == nil || !strings.Contains(err.Error(), "NATS node in "+dir) {
		t.Fatalf("making a token beside a NATS relay: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, sqlite.FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the attached window made a SQLite history beside the NATS one: %v", err)
	}
}
