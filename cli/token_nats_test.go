package cli

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// pilotdesk token --nats: the tokens are the cluster's. A token made by
// the command opens a connection on a relay of the cluster, list shows it,
// and revoke closes that connection with 4003 within the relay's poll.
func TestTokenCommandOnCluster(t *testing.T) {
	c := natstest.Start(t, 3)
	var urls []string
	for _, n := range c.Nodes {
		urls = append(urls, fmt.Sprintf("nats://%s@127.0.0.1:%d", url.User(c.User), n.ClientPort))
	}
	natsURLs := strings.Join(urls, ",")
	// The password as docs/operations.md gives it: in the environment.
	env := map[string]string{natsPasswordEnv: c.Password}
	runCLI := func(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
		t.Helper()
		return runCLIEnv(t, ctx, env, args...)
	}
	ctx := context.Background()

	nc, err := c.Connect(1)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	store, err := jetstream.Open(octx, nc, jetstream.Options{Replicas: 3})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r := relaytest.Start(t, relay.Config{Store: store, Token: "the-relay-token"})

	code, out, stderr := runCLI(t, ctx, "token", "create", "--name", "Pixel", "--role", "controller", "--nats", natsURLs)
	if code != 0 {
		t.Fatalf("create: %d\n%s", code, stderr)
	}
	token, rest, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(token, "pdt_") || !strings.Contains(rest, "Every relay on the cluster takes it") || strings.Contains(out+stderr, c.Password) {
		t.Fatalf("create said:\n%s\n%s", out, stderr)
	}
	cl := relaytest.Dial(t, relaytest.WithToken(r.URL, token), "")
	cl.Send(protocol.TypePing, nil)
	cl.Expect(protocol.TypePong)

	code, out, _ = runCLI(t, ctx, "token", "list", "--nats", natsURLs)
	if code != 0 || !strings.Contains(out, "Pixel") || !strings.Contains(out, "controller") || strings.Contains(out, token) {
		t.Fatalf("list: %d\n%s", code, out)
	}
	if code, _, stderr := runCLI(t, ctx, "token", "create", "--name", "Pixel", "--role", "viewer", "--nats", natsURLs); code != 1 || !strings.Contains(stderr, "exists already") {
		t.Fatalf("a second Pixel: %d %s", code, stderr)
	}
	code, out, stderr = runCLI(t, ctx, "token", "revoke", "Pixel", "--nats", natsURLs)
	if code != 0 || !strings.Contains(out, "every relay on the cluster") {
		t.Fatalf("revoke: %d\n%s%s", code, out, stderr)
	}
	if code, reason := cl.WaitClosed(); code != relay.CloseRevoked {
		t.Fatalf("the revoked device's connection closed with %d %q, want 4003", code, reason)
	}
	for _, args := range [][]string{
		{"token", "list", "--nats-creds", "x.creds"},                      // without --nats
		{"token", "list", "--nats", natsURLs, "--nats-replicas", "0"},     // no replicas
		{"token", "list", "--nats", "embedded", "--data-dir", ":memory:"}, // no node dir
	} {
		if code, _, _ := runCLI(t, ctx, args...); code != 2 {
			t.Errorf("%v exited %d, want 2", args, code)
		}
	}
}

// pilotdesk token --nats embedded works on the node of a data dir no relay
// runs on: the tokens a `serve --nats embedded` relay of that dir uses.
func TestTokenCommandOnEmbeddedNode(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	code, out, stderr := runCLI(t, ctx, "token", "create", "--name", "ssh", "--role", "viewer", "--nats", "embedded", "--data-dir", dir)
	if code != 0 {
		t.Fatalf("create: %d\n%s", code, stderr)
	}
	token, _, _ := strings.Cut(out, "\n")
	node, err := jetstream.StartEmbedded(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := node.Connect("test")
	if err != nil {
		node.Shutdown()
		t.Fatal(err)
	}
	store, err := jetstream.Open(ctx, nc, jetstream.Options{Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	devs, err := store.Devices(ctx)
	if err != nil || len(devs) != 1 || devs[0].Name != "ssh" || devs[0].Hash != sha256.Sum256([]byte(token)) {
		t.Fatalf("the node's devices: %+v, %v", devs, err)
	}
	// While the node is held (a relay runs on it), the command is refused.
	if code, _, stderr := runCLI(t, ctx, "token", "list", "--nats", "embedded", "--data-dir", dir); code != 1 || !strings.Contains(stderr, "holds it") {
		t.Fatalf("list beside a running node: %d %s", code, stderr)
	}
	store.Close()
	nc.Close()
	node.Shutdown()
	if code, out, stderr := runCLI(t, ctx, "token", "revoke", "ssh", "--nats", "embedded", "--data-dir", dir); code != 0 || !strings.Contains(out, "Revoked") {
		t.Fatalf("revoke: %d %s%s", code, out, stderr)
	}
}

// The relay and the token commands open a NATS history with one opener:
// what stops them is said to both alike, the node of a data dir that a
// running relay holds, and three replicas asked of a single nats-server
// with the flag that mends it.
func TestNATSOpenersSayTheSame(t *testing.T) {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func(n natsSettings, dataDir string) (relayErr, tokenErr error) {
		t.Helper()
		st, err := openNATSStore(ctx, relaySettings{DataDir: dataDir, NATS: n}, logger)
		if err == nil {
			st.Close()
		}
		d, derr := openNATSDevices(ctx, n, dataDir, logger)
		if derr == nil {
			d.Close()
		}
		return err, derr
	}
	t.Run("held node", func(t *testing.T) {
		dir := t.TempDir()
		node, err := jetstream.StartEmbedded(dir, logger)
		if err != nil {
			t.Fatal(err)
		}
		defer node.Shutdown()
		relayErr, tokenErr := open(natsSettings{URLs: natsEmbedded, Replicas: 1, Streams: 1, Lease: time.Second}, dir)
		for who, err := range map[string]error{"serve": relayErr, "token": tokenErr} {
			if err == nil || !errors.Is(err, jetstream.ErrInUse) || !strings.Contains(err.Error(), "opening the NATS node in "+dir) || !strings.Contains(err.Error(), "a relay running on it holds it") {
				t.Errorf("%s beside a running node: %v", who, err)
			}
		}
	})
	t.Run("replicas on a single server", func(t *testing.T) {
		c := natstest.Start(t, 1)
		n := natsSettings{URLs: fmt.Sprintf("nats://%s@127.0.0.1:%d", url.User(c.User), c.Nodes[0].ClientPort),
			Password: c.Password, Replicas: 3, Lease: 15 * time.Second}
		relayErr, tokenErr := open(n, t.TempDir())
		for who, err := range map[string]error{"serve": relayErr, "token": tokenErr} {
			if err == nil || !strings.Contains(err.Error(), "opening the history on NATS") || !strings.Contains(err.Error(), "a single nats-server, not a cluster: pass --nats-replicas 1") {
				t.Errorf("%s with 3 replicas on one server: %v", who, err)
			}
		}
	})
}
