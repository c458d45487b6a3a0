package relay

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// slowLatestCluster is a cluster of one relay whose reads of a
// conversation's stored state take until released, and are counted.
type slowLatestCluster struct {
	soloCluster
	release chan struct{}
	reads   *atomic.Int32
}

func (s slowLatestCluster) Latest(ctx context.Context, _ string) (history.Conversation, error) {
	s.reads.Add(1)
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return history.Conversation{}, errors.New("not read in this test")
}

// TestClusterReconnectedCatchUpOnce: the cluster says Reconnected every
// second while its live subscription keeps dropping messages. A watched
// remote conversation must then catch up once at a time, not start one
// more catch-up (a read of the stream) per call while the first still
// runs; once it ends, the next call starts another.
func TestClusterReconnectedCatchUpOnce(t *testing.T) {
	reads := &atomic.Int32{}
	cl := slowLatestCluster{release: make(chan struct{}), reads: reads}
	r, err := New(Config{Agent: &openCounter{}, Store: history.NewMemory(), Cluster: cl})
	if err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			close(cl.release)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Close(ctx)
	}()
	// A remote conversation a client watches.
	_ = r.withConversation(context.Background(), "watched", func(c *conversation) {
		c.subs = append(c.subs, &subscriber{})
	})
	hooks := clusterHooks{r: r}
	waitReads := func(want int32) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for reads.Load() < want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // any more that would start, do
		if n := reads.Load(); n != want {
			t.Fatalf("%d catch-ups read the stream, want %d", n, want)
		}
	}
	for range 5 {
		hooks.Reconnected()
	}
	waitReads(1)
	close(cl.release)
	released = true
	// The catch-up ends (its read fails, logged); then a new call
	// starts one again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		hooks.Reconnected()
		if reads.Load() >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := reads.Load(); n < 2 {
		t.Fatalf("no catch-up after the first one ended (%d reads)", n)
	}
}
