package relay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// failingClaims is a cluster membership whose first claims fail, as they
// do while the owners bucket elects a leader.
type failingClaims struct {
	history.Cluster
	fails atomic.Int32 // claims still to fail
	tried atomic.Int32
}

func (c *failingClaims) Claim(ctx context.Context, id string) (string, string, error) {
	c.tried.Add(1)
	if c.fails.Add(-1) >= 0 {
		return "", "", errors.New("no answer from the owners bucket (the test's)")
	}
	return c.Cluster.Claim(ctx, id)
}

// TestClusterTakeoverTriedAgain: when the relay of a turn that B's client
// watches dies, and B's claim of the conversation fails, B tries again
// and closes the turn. Before, B gave up at the first failure and its
// client's turn stayed open for good.
func TestClusterTakeoverTriedAgain(t *testing.T) {
	parallel(t)
	b := memoryBackend(t)
	s := clusterScript(t)
	a := b.relay(t, 0, s)
	claims := &failingClaims{}
	claims.fails.Store(2)
	bb := b.relayMod(t, 1, script.New(s), jetstream.ClusterOptions{Lease: testLease}, func(cfg *relay.Config) {
		claims.Cluster = cfg.Cluster
		cfg.Cluster = claims
	})
	ca, cb := a.srv.Dial(t), bb.srv.Dial(t)
	id := "takeover-again"

	send(ca, id, "long")
	ca.WaitFor("copilot:delta", nil)
	replayFrom(cb, id, 0)
	cb.WaitFor("copilot:delta", nil)
	a.cut()
	ca.Close()

	idle, _ := cb.WaitForCollect("copilot:idle", nil)
	if idle.Field("status") != "error" || !strings.Contains(fmt.Sprint(idle.Field("message")), "relay lost") {
		t.Fatalf("B's client got %s", idle.Raw)
	}
	if n := claims.tried.Load(); n < 3 {
		t.Fatalf("B claimed %d times, want two failures and a success", n)
	}
	if logs := bb.logs.all(); !strings.Contains(logs, "failed; trying again") {
		t.Fatalf("B's log does not say it tried again:\n%s", logs)
	}
}
