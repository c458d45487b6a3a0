package jetstream

import (
	"context"
	"fmt"
	"sync"
	"testing"

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
