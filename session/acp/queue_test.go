package acp

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/pilotdesk/pilotdesk/internal/queue"
)

// TestWorkQueueBounded: work runs in order; past the bound a push fails
// with ErrFull instead of the queue growing; what is queued still runs after
// close.
func TestWorkQueueBounded(t *testing.T) {
	q := newWorkQueue()
	var ran atomic.Int64
	release := make(chan struct{})
	if err := q.push(func() { <-release }); err != nil { // holds the pump once it runs
		t.Fatal(err)
	}
	done := make(chan struct{})
	go q.run(done)
	for {
		err := q.push(func() { ran.Add(1) })
		if errors.Is(err, queue.ErrFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ran.Load() > 0 {
			t.Fatal("work ran while the pump was held")
		}
	}
	close(release)
	if err := q.pushWait(context.Background(), func() { ran.Add(1) }); err != nil {
		t.Fatalf("pushWait: %v", err)
	}
	q.close()
	<-done
	if n := ran.Load(); n < workQueueLen-1 {
		t.Fatalf("%d pieces of work ran, want every queued one", n)
	}
	if err := q.push(func() {}); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("push after close: %v", err)
	}
}
