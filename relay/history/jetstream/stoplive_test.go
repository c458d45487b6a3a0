package jetstream

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// slowLiveHooks takes a while over every delete notice, and notes one
// that was still running, or started, once Stop had returned.
type slowLiveHooks struct {
	quietHooks
	entered  chan struct{}
	calls    atomic.Int32
	stopped  atomic.Bool // Stop returned
	lateHook atomic.Int32
}

func (h *slowLiveHooks) Deleted(string) {
	if h.calls.Add(1) == 1 {
		close(h.entered)
	}
	if h.stopped.Load() {
		h.lateHook.Add(1)
	}
	time.Sleep(300 * time.Millisecond)
	if h.stopped.Load() {
		h.lateHook.Add(1)
	}
}

// TestClusterNoLiveHookAfterStop: once Stop returns, no hook of the live
// subscription runs: not the one that was running (nats.go's Unsubscribe
// does not wait for it: Stop waits for deliver), and none of those queued
// behind it. A hook after
// Stop would read a closed store, or make a conversation on a relay that
// closed.
func TestClusterNoLiveHookAfterStop(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	nc := clusterConn(t, c, 0)
	resetDefault(t, nc)
	st := openR3(t, nc, Options{})
	cl, err := NewCluster(context.Background(), st, ClusterOptions{Lease: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := &slowLiveHooks{entered: make(chan struct{})}
	if err := cl.Start(h); err != nil {
		t.Fatal(err)
	}
	pub := clusterConn(t, c, 1)
	for i := range 5 {
		// On the changes subject: a relay follows the live subjects of
		// only the conversations its clients watch (follow.go).
		m := &nats.Msg{Subject: cl.changedSubject("conv" + string(rune('a'+i))), Header: nats.Header{}}
		m.Header.Set(hdrDeleted, "1")
		if err := pub.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the delete notices never reached the hook")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	h.stopped.Store(true)
	time.Sleep(time.Second) // what would still run, does
	if n := h.lateHook.Load(); n > 0 {
		t.Errorf("live hooks ran after Stop returned (%d times)", n)
	}
	if n := h.calls.Load(); n >= 5 {
		t.Errorf("all %d notices queued when Stop began ran their hook", n)
	}
}
