package jetstream

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestClusterRenewalStoredAckLost: a renewal of the lease that was stored
// but whose acknowledgement never came back (the bucket's leader was cut
// off the network just after it stored it) leaves the relay expecting an
// older revision of its key, so its next renewal is refused. The lease
// holds all the same (only this relay writes its key): the relay must
// renew from the stored revision, not count its lease lapsed and stop its
// turns (TestChaos node-partition: a relay on a node the partition did not
// touch lost its lease 10 s into a 15 s one).
func TestClusterRenewalStoredAckLost(t *testing.T) {
	_, nc := embedded(t)
	st := openEmbedded(t, nc, "acklost", Options{})
	h := lapseHooks{lost: make(chan bool, 1)}
	const lease = 2 * time.Second
	a := startCluster(t, st, ClusterOptions{Lease: lease}, h)
	id := a.ID()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The renewal the relay never heard of, as it sends them.
	for {
		a.mu.Lock()
		rev := a.leaseRev
		a.mu.Unlock()
		_, err := st.js.PublishMsg(ctx, &nats.Msg{Subject: "$KV." + a.relaysBucket() + "." + id, Data: newLeaseValue()},
			jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(lease))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("storing a renewal behind the relay's back: %v", err)
		}
		// The relay renewed in between: try again with its new revision.
	}

	select {
	case stalled := <-h.lost:
		t.Fatalf("the relay counted its lease lapsed (stalled %v) after a renewal of its own was stored unacknowledged", stalled)
	case <-time.After(3 * lease):
	}
	if a.ID() != id {
		t.Fatalf("the relay announced itself again, as %s (was %s)", a.ID(), id)
	}
	if why := a.Health(); why != "" {
		t.Fatalf("the relay is not healthy: %s", why)
	}
}
