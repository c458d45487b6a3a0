package jetstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// quietHooks is a relay that does nothing with what the cluster tells it.
type quietHooks struct{}

func (quietHooks) Command(context.Context, []byte) []byte               { return nil }
func (quietHooks) Stored(string, []history.Event, history.Conversation) {}
func (quietHooks) Deleted(string)                                       {}
func (quietHooks) RelayGone(string)                                     {}
func (quietHooks) Reconnected()                                         {}
func (quietHooks) LeaseLost(bool)                                       {}

// TestClusterClaimRace: when a relay dies, every survivor whose clients
// watch its conversations claims them at once (relay/cluster.go's
// RelayGone). On a 3-node cluster two conditional updates of the same
// owner record at the same moment may be refused with 10164 ("wrong last
// sequence", a proposal in flight) rather than 10071: the loser must look
// again and find the winner, not fail. (Seen in make load
// LOAD_FLAGS=-nats: "could not take over … key revision mismatch", and a
// command routed then gets error limit.)
func TestClusterClaimRace(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	nc := clusterConn(t, c, 0)
	resetDefault(t, nc)
	var members []*Cluster
	for i := range 2 {
		st := openR3(t, clusterConn(t, c, i), Options{})
		members = append(members, startCluster(t, st, ClusterOptions{}, quietHooks{}))
	}
	ctx := context.Background()
	for round := range 30 {
		id := fmt.Sprintf("conv-%d", round)
		// Owned by a relay that has no lease: dead.
		if _, err := members[0].owners.Put(ctx, token(id), []byte("dead-relay")); err != nil {
			t.Fatal(err)
		}
		owners := make([]string, len(members))
		errs := make([]error, len(members))
		var wg sync.WaitGroup
		for i, m := range members {
			wg.Go(func() { owners[i], _, errs[i] = m.Claim(ctx, id) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: relay %d's claim failed: %v", round, i, err)
			}
		}
		if owners[0] != owners[1] || (owners[0] != members[0].ID() && owners[0] != members[1].ID()) {
			t.Fatalf("round %d: the relays say the owner is %q and %q", round, owners[0], owners[1])
		}
	}
}

// lapseHooks tells the test when the relay's own lease lapsed.
type lapseHooks struct {
	quietHooks
	lost chan bool
}

func (h lapseHooks) LeaseLost(stalled bool) {
	select {
	case h.lost <- stalled:
	default:
	}
}

// TestClusterNoClaimWithoutLease: a relay whose own lease lapsed because
// its renewals failed (a quorum loss, played by failing them) claims
// nothing until it has announced itself again. Claimed under the dead id,
// the conversation was anyone's at once: in a TestChaos quorum-loss run
// (seed 104) a relay took conversations over 75 ms before it announced
// itself again, another relay claimed and wrote one of them, and the first,
// believing it owned it, served a replay cut at seq 289 of 1037. The lapse
// is not a stall: LeaseLost says so.
func TestClusterNoClaimWithoutLease(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	st := openEmbedded(t, nc, "nolease", Options{})
	var failing atomic.Bool
	h := lapseHooks{lost: make(chan bool, 1)}
	a := startCluster(t, st, ClusterOptions{Lease: 2 * time.Second, BeforeRenew: func(context.Context) error {
		if failing.Load() {
			return errors.New("the renewal timed out (played by the test)")
		}
		return nil
	}}, h)
	first := a.ID()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	failing.Store(true)
	select {
	case stalled := <-h.lost:
		if stalled {
			t.Error("a lease whose renewals failed lapsed as a stalled relay's")
		}
	case <-ctx.Done():
		t.Fatal("the lease never lapsed")
	}
	if owner, _, err := a.Claim(ctx, "conv"); !errors.Is(err, history.ErrNoLease) {
		t.Fatalf("a claim without a lease: owner %q, err %v; want history.ErrNoLease", owner, err)
	}
	if owner, _, err := a.Owner(ctx, "conv"); err != nil || owner != "" {
		t.Fatalf("the refused claim left the owner %q (%v)", owner, err)
	}
	failing.Store(false)
	for a.ID() == first {
		select {
		case <-ctx.Done():
			t.Fatal("the relay never announced itself again")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if owner, _, err := a.Claim(ctx, "conv"); err != nil || owner != a.ID() {
		t.Fatalf("the claim after the relay announced itself again as %s: owner %q, %v", a.ID(), owner, err)
	}
}

// TestClusterFormerLeaseWithdrawn: a relay that announces itself again
// after its lease lapsed deletes its former lease key, so the other relays
// hear of the lapse (RelayGone) from that, not only from the key's TTL
// marker, which a quorum loss can swallow (a TestChaos quorum-loss run:
// no relay heard of the others' former leases, and a turn stayed open).
// Here the former key outlives the lapse for an hour: the relay's
// renewals land while it is told they failed, with a TTL the test makes
// an hour, so only the delete can tell the other relay.
func TestClusterFormerLeaseWithdrawn(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	st := openEmbedded(t, nc, "withdraw", Options{})
	other := goneHooks{gone: make(chan string, 16)}
	startCluster(t, st, ClusterOptions{Lease: 15 * time.Second}, other)
	var failing atomic.Bool
	var a *Cluster
	h := lapseHooks{lost: make(chan bool, 1)}
	a = startCluster(t, st, ClusterOptions{Lease: 2 * time.Second, BeforeRenew: func(ctx context.Context) error {
		if !failing.Load() {
			return nil
		}
		// The renewal lands; its answer is lost.
		_, err := st.js.PublishMsg(ctx, &nats.Msg{Subject: "$KV." + a.relaysBucket() + "." + a.ID(), Data: newLeaseValue()},
			jetstream.WithMsgTTL(time.Hour))
		return fmt.Errorf("the renewal's answer was lost (played by the test; it landed: %v)", err)
	}}, h)
	first := a.ID()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	failing.Store(true)
	select {
	case <-h.lost:
	case <-ctx.Done():
		t.Fatal("the lease never lapsed")
	}
	failing.Store(false)
	for {
		select {
		case id := <-other.gone:
			if id != first {
				continue
			}
			if a.ID() == first {
				t.Fatal("the other relay heard of the lapse before the relay announced itself again")
			}
			if _, err := a.relays.Get(ctx, first); !errors.Is(err, jetstream.ErrKeyNotFound) {
				t.Fatalf("the former lease key: %v; want it deleted", err)
			}
			return
		case <-ctx.Done():
			t.Fatalf("the other relay never heard that %s is gone (the relay is %s now)", first, a.ID())
		}
	}
}

// TestClusterStartWaitsForALeader: a relay that starts while the cluster
// has no quorum (nodes restarting, a leader election) announces itself
// once there is one, instead of failing at its first try.
func TestClusterStartWaitsForALeader(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	nc := clusterConn(t, c, 0)
	resetDefault(t, nc)
	st := openR3(t, nc, Options{WriteTimeout: 2 * time.Minute})
	logs := &testsupport.Buffer{}
	cl := newCluster(t, st, ClusterOptions{Lease: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	c.Kill(1)
	c.Kill(2)
	started := make(chan error, 1)
	go func() { started <- cl.Start(quietHooks{}) }()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(logs.String(), "trying again") {
		select {
		case err := <-started:
			t.Fatalf("Start returned %v without a quorum", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("Start neither returned nor tried again:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.Restart(1)
	c.Restart(2)
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("Start after the quorum came back: %v\n%s", err, logs.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("Start still waits 2 minutes after the quorum came back:\n%s", logs.String())
	}
	// (Its 2 s lease may lapse again while the cluster settles: the
	// renewer announces it again then, as after any lapse.)
}
