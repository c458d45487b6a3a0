package jetstream

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// blockingHooks runs forwarded commands that wait until released, and
// counts how many run at once.
type blockingHooks struct {
	quietHooks
	release chan struct{}

	mu      sync.Mutex // guards running, peak
	running int
	peak    int
}

func (h *blockingHooks) Command(ctx context.Context, _ []byte) []byte {
	h.mu.Lock()
	h.running++
	h.peak = max(h.peak, h.running)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.running--
		h.mu.Unlock()
	}()
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return []byte("{}")
}

// TestClusterForwardedFlood floods a relay with forwarded commands that
// take long: it must not run a goroutine for each (a hostile or broken
// peer would exhaust its memory), but at most maxForwarded at once, and
// still answer them all once they finish.
func TestClusterForwardedFlood(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	nc := clusterConn(t, c, 0)
	resetDefault(t, nc)
	st := openR3(t, nc, Options{})
	h := &blockingHooks{release: make(chan struct{})}
	cl := startCluster(t, st, ClusterOptions{}, h)

	sender := clusterConn(t, c, 1)
	inbox := sender.NewRespInbox()
	answers, err := sender.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3 * maxForwarded
	for range n {
		if err := sender.PublishRequest(cl.cmdSubject(cl.ID()), inbox, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	if err := sender.Flush(); err != nil {
		t.Fatal(err)
	}
	// Until the running ones fill the slots (or, without a bound, all
	// of them start).
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		running := h.running
		h.mu.Unlock()
		if running >= maxForwarded || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // any more that would start, do
	h.mu.Lock()
	peak := h.peak
	h.mu.Unlock()
	if peak > maxForwarded {
		t.Fatalf("%d forwarded commands ran at once, want at most %d", peak, maxForwarded)
	}
	if peak < maxForwarded {
		t.Fatalf("only %d forwarded commands ran at once, want %d", peak, maxForwarded)
	}
	close(h.release)
	for i := range n {
		if _, err := answers.NextMsg(10 * time.Second); err != nil {
			t.Fatalf("answer %d of %d: %v", i+1, n, err)
		}
	}
}
