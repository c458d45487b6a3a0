package relay

import (
	"log/slog"
	"testing"
)

// A connection's send queue is bounded by frames, not by the runs the
// fan-out queues them in (outRun): a run that would take it over
// Config.SendQueue frames closes it as too slow, as the same frames one by
// one would, and a replay's room (fits) counts the frames of the runs
// queued.
func TestSendQueueCountsFramesOfRuns(t *testing.T) {
	const bound = 8
	c := &conn{r: &Relay{sendQueue: bound}, queue: newSendQueue(bound), log: slog.New(slog.DiscardHandler)}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closeWatchdog != nil {
			c.closeWatchdog.Stop() // it would close a WebSocket this connection does not have
		}
	})
	frames := func(n int) [][]byte {
		f := make([][]byte, n)
		for i := range f {
			f[i] = []byte("{}")
		}
		return f
	}
	if !c.enqueueMany(frames(5)) || !c.enqueue([]byte("{}")) {
		t.Fatal("6 frames refused by a queue of 8")
	}
	if got := c.queue.Len(); got != 6 {
		t.Fatalf("queue length %d after a run of 5 and a frame, want 6 frames", got)
	}
	if c.unwritten.Load() != 12 {
		t.Fatalf("%d bytes unwritten, want 12", c.unwritten.Load())
	}
	if !c.fits(2) || c.fits(3) {
		t.Fatalf("fits(2) %v, fits(3) %v with 6 of 8 frames queued: want true, false", c.fits(2), c.fits(3))
	}
	if c.enqueueMany(frames(3)) {
		t.Fatal("a run taking the queue to 9 of 8 frames was queued")
	}
	if closing, _, code, _ := c.closeState(); !closing || code != CloseTooSlow {
		t.Fatalf("after the overflow: closing %v with %d, want closing with %d (too slow)", closing, code, CloseTooSlow)
	}
}
