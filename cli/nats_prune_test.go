package cli

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session/script"
)

const echoScript = `{"turns": [{"steps": [{"delta": "Echo: {{prompt}}"}]}]}`

// serve --nats --history-max-age on a cluster of relays: the relay that
// starts does not drop, behind the others' backs, the conversations a
// live relay owns; one whose relay is gone it deletes as its owner would,
// and the other relays' subscribers hear of it.
func TestServeNATSHistoryMaxAgeShared(t *testing.T) {
	c := natstest.Start(t, 3)
	var urls []string
	for _, n := range c.Nodes {
		urls = append(urls, fmt.Sprintf("nats://%s@127.0.0.1:%d", url.UserPassword(c.User, c.Password), n.ClientPort))
	}
	sc, err := script.Parse("echo.json", []byte(echoScript))
	if err != nil {
		t.Fatal(err)
	}
	member := func(i int) (*relaytest.Server, *jetstream.Store) {
		nc, err := c.Connect(i)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		store, err := jetstream.Open(ctx, nc, jetstream.Options{Replicas: 3})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		// No relay here is lost (the gone one stops cleanly and gives its
		// conversations up): a lease far longer than a busy machine's
		// stalls, which at 2 s ended A's turn in an error.
		cl, err := jetstream.NewCluster(ctx, store, jetstream.ClusterOptions{Lease: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return relaytest.Start(t, relay.Config{Agent: script.New(sc), Store: store, Cluster: cl}), store
	}
	a, aStore := member(0)
	gone, _ := member(1)
	ca, cg := a.Dial(t), gone.Dial(t)
	cg.Send("copilot:send", map[string]any{"conversationId": "orphan", "prompt": "hello"})
	cg.WaitFor("copilot:idle", nil)
	gone.Close() // it gives its conversations up: nobody owns orphan
	ca.Send("copilot:send", map[string]any{"conversationId": "kept", "prompt": "hello"})
	ca.WaitFor("copilot:idle", nil)
	ca.Send("copilot:subscribe", map[string]any{"conversationId": "orphan", "sinceSeq": 0})
	if sub := ca.WaitFor("copilot:subscribed", nil); sub.Seq() == 0 {
		t.Fatalf("A found nothing of orphan: %s", sub.Raw)
	}

	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o700); err != nil { // the relay's own files (relay.json)
		t.Fatal(err)
	}
	scriptFile := filepath.Join(dir, "echo.json")
	if err := os.WriteFile(scriptFile, []byte(echoScript), 0o600); err != nil {
		t.Fatal(err)
	}
	st := serveStack(t, "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--agent", "script", "--script", scriptFile,
		"--nats", strings.Join(urls, ","), "--nats-lease", "20s", "--history-max-age", "1ms")
	defer closeStack(t, st)

	ca.WaitFor("copilot:deleted", func(f relaytest.Frame) bool { return f.Field("conversationId") == "orphan" })
	ctx, cancel := context.WithTimeout(context.Background(), relaytest.Timeout)
	defer cancel()
	if _, err := aStore.Conversation(ctx, "orphan"); err != history.ErrNotFound {
		t.Errorf("orphan is still stored: %v", err)
	}
	if _, err := aStore.Conversation(ctx, "kept"); err != nil {
		t.Errorf("the new relay dropped A's conversation: %v", err)
	}
	ca.Send("copilot:send", map[string]any{"conversationId": "kept", "prompt": "again"})
	if idle := ca.WaitFor("copilot:idle", nil); idle.Field("status") != "completed" {
		t.Errorf("A's next turn: %s", idle.Raw)
	}
}
