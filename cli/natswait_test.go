package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// natsWaitSettings are serve's settings for the nodes at ports, as the
// relay user of natstest.
func natsWaitSettings(user, password string, ports []int, wait time.Duration) relaySettings {
	urls := make([]string, len(ports))
	for i, p := range ports {
		urls[i] = fmt.Sprintf("nats://%s@127.0.0.1:%d", url.UserPassword(user, password), p)
	}
	return relaySettings{NATS: natsSettings{URLs: strings.Join(urls, ","), Replicas: len(ports), Streams: 1,
		Lease: 15 * time.Second, StartWait: wait}}
}

type openResult struct {
	st  *natsStore
	err error
}

// startOpening runs openNATSStoreWaiting on its own goroutine; the store
// it opens is closed when the test ends.
func startOpening(t *testing.T, ctx context.Context, s relaySettings, logger *slog.Logger) <-chan openResult {
	done := make(chan openResult, 1)
	go func() {
		st, err := openNATSStoreWaiting(ctx, s, logger)
		done <- openResult{st, err}
		close(done)
	}()
	t.Cleanup(func() {
		if r, ok := <-done; ok && r.st != nil {
			r.st.Close()
		}
	})
	return done
}

func waitForLog(t *testing.T, logs *testsupport.Buffer, want string) {
	t.Helper()
	deadline := time.Now().Add(relaytest.Timeout)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log:\n%s", want, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeWaitsForTheCluster: a relay started while its NATS cluster is
// down (nodes and relays booting together) waits, saying why, and runs
// once a quorum of nodes is up, instead of exiting.
func TestServeWaitsForTheCluster(t *testing.T) {
	c := natstest.Start(t, 3)
	c.WaitReady(relaytest.Timeout)
	ports := make([]int, len(c.Nodes))
	for i, n := range c.Nodes {
		ports[i] = n.ClientPort
		c.Kill(i)
	}
	logs := &testsupport.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	done := startOpening(t, context.Background(), natsWaitSettings(c.User, c.Password, ports, 5*time.Minute), logger)

	waitForLog(t, logs, "the NATS cluster does not answer yet")
	if !strings.Contains(logs.String(), "no servers available") {
		t.Errorf("the warning does not say why:\n%s", logs.String())
	}
	select {
	case r := <-done:
		t.Fatalf("returned with no node up: %v", r.err)
	default:
	}
	for i := range c.Nodes {
		c.Restart(i)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("the cluster came back, but: %v\n%s", r.err, logs.String())
		}
		if r.st.cluster == nil {
			t.Error("opened without joining the relays")
		}
		r.st.Close()
	case <-time.After(3 * relaytest.Timeout):
		t.Fatalf("still waiting %v after the nodes came back:\n%s", 3*relaytest.Timeout, logs.String())
	}
}

// TestServeStopsWaitingForNATS: the wait ends at StartWait with the last
// error and how long it waited, at once on SIGTERM (ctx), and never starts
// for a failure that waiting cannot mend (a wrong password).
func TestServeStopsWaitingForNATS(t *testing.T) {
	t.Run("bounded", func(t *testing.T) {
		ports := natstest.FreePorts(t, 1)
		logs := &testsupport.Buffer{}
		start := time.Now()
		r := <-startOpening(t, context.Background(), natsWaitSettings("relay", "pw", ports, 2*time.Second), slog.New(slog.NewTextHandler(logs, nil)))
		if r.err == nil || !strings.Contains(r.err.Error(), "no servers available") || !strings.Contains(r.err.Error(), "the cluster did not answer for 2s") {
			t.Fatalf("err = %v", r.err)
		}
		if took := time.Since(start); took < time.Second {
			t.Errorf("gave up after %v, without waiting", took)
		}
		if !strings.Contains(logs.String(), "does not answer yet") {
			t.Errorf("no warning while it waited:\n%s", logs.String())
		}
	})
	t.Run("SIGTERM", func(t *testing.T) {
		ports := natstest.FreePorts(t, 1)
		logs := &testsupport.Buffer{}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := startOpening(t, ctx, natsWaitSettings("relay", "pw", ports, 10*time.Minute), slog.New(slog.NewTextHandler(logs, nil)))
		waitForLog(t, logs, "does not answer yet")
		cancel()
		select {
		case r := <-done:
			if r.err == nil {
				t.Fatal("opened with no server")
			}
		case <-time.After(relaytest.Timeout):
			t.Fatal("still waiting after ctx ended")
		}
	})
	// What waiting cannot mend is said at once: a wrong password; three
	// replicas on a server that is no cluster, with the flag that mends it
	// (a cluster short of a quorum is waited for).
	for _, tc := range []struct {
		name     string
		wrong    bool // the password
		replicas int
		want     string
	}{
		{"wrong password", true, 1, "Authorization Violation"},
		{"replicas on a single server", false, 3, "a single nats-server, not a cluster: pass --nats-replicas 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := natstest.Start(t, 1)
			password := c.Password
			if tc.wrong {
				password = "wrong"
			}
			logs := &testsupport.Buffer{}
			s := natsWaitSettings(c.User, password, []int{c.Nodes[0].ClientPort}, 10*time.Minute)
			s.NATS.Replicas = tc.replicas
			r := <-startOpening(t, context.Background(), s, slog.New(slog.NewTextHandler(logs, nil)))
			if r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
				t.Fatalf("err = %v", r.err)
			}
			if strings.Contains(logs.String(), "does not answer yet") {
				t.Errorf("waited for what waiting cannot mend:\n%s", logs.String())
			}
		})
	}
}
