package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
)

// TestWindowAttachesToServeOnEmbeddedNATS: a window or a chat (which take
// no --nats: their relay would keep its history in SQLite) started on the
// data dir of a `serve --nats embedded` attaches to that relay, where it
// started a second relay beside it, with a SQLite history of its own and
// no conversation, and took the data dir's relay.json, so that the next
// chat and `pilotdesk token` went to it (seen in a walk).
func TestWindowAttachesToServeOnEmbeddedNATS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	serve := demoFlags(dir)
	serve.relay.NATS = natsSettings{URLs: natsEmbedded, Replicas: 1, Streams: 1, Lease: 15 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	first, stop, err := serve.startTarget(ctx, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	window := serve
	window.relay.NATS = natsSettings{} // the window's flags: no --nats
	second, stopSecond, err := window.startTarget(ctx, logger)
	if err != nil {
		t.Fatalf("a window on the data dir of a NATS relay: %v", err)
	}
	defer stopSecond()
	if second.Attached == "" || second.Embedded || second.URL != first.URL {
		t.Fatalf("the window did not attach to %s: %+v", first.URL, second)
	}
	if _, err := os.Stat(filepath.Join(dir, sqlite.FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the window made a SQLite history beside the NATS one: %v", err)
	}
	if r, err := readRunning(dir); err != nil || r.URL != first.URL {
		t.Fatalf("relay.json names %+v (%v), want the NATS relay at %s", r, err, first.URL)
	}
	// Its devices dialog, and pilotdesk token without --nats, say how
	// tokens are made: none is written where that relay does not read it.
	howTo := "pilotdesk token create --nats embedded --data-dir " + dir
	if _, err := newWindowDevices(second).CreateDevice(ctx, "Pixel", protocol.RoleController, time.Time{}); err == nil || !strings.Contains(err.Error(), howTo) {
		t.Fatalf("making a token beside a NATS relay: %v", err)
	}
	code, out, stderr := runCLI(t, ctx, "token", "create", "--name", "Pixel", "--role", "controller", "--data-dir", dir)
	if code != 1 || !strings.Contains(stderr, howTo) || strings.Contains(out, "pdt_") {
		t.Fatalf("pilotdesk token create beside a NATS relay: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, sqlite.FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pilotdesk token made a SQLite history beside the NATS one: %v", err)
	}
}

// TestServeOnEmbeddedNATSRefusedBesideSQLite: `serve --nats embedded` on
// the data dir of a running window (or serve) that keeps its history in
// SQLite is refused, naming it, where it started a second relay beside it
// and took its relay.json, which it removed when it stopped, so that a
// chat could no longer find the first (seen in a walk).
func TestServeOnEmbeddedNATSRefusedBesideSQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	window := demoFlags(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	first, stop, err := window.startTarget(ctx, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	serveCtx, cancelServe := context.WithTimeout(ctx, 60*time.Second)
	defer cancelServe()
	code, _, stderr := runCLI(t, serveCtx, "serve", "--nats", "embedded", "--data-dir", dir, "--agent", "script", "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(stderr, fmt.Sprintf("process %d runs a relay on it", os.Getpid())) {
		t.Fatalf("serve --nats embedded beside a SQLite relay: exit %d\n%s", code, stderr)
	}
	if r, err := readRunning(dir); err != nil || r.URL != first.URL {
		t.Fatalf("relay.json names %+v (%v), want the window's relay at %s", r, err, first.URL)
	}
	if _, err := os.Stat(filepath.Join(dir, "nats")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("serve made a NATS node beside the SQLite history: %v", err)
	}
}
