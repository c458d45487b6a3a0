package acp

import (
	"context"
	"errors"

	"github.com/pilotdesk/pilotdesk/internal/queue"
)

// workQueueLen bounds the work waiting for a session's pump: about a
// minute of an agent's fastest streaming. Past it the relay has fallen too
// far behind; the turn is stopped rather than memory growing without end.
const workQueueLen = 16384

// errFellBehind stops a turn whose updates came faster than the relay took
// them for longer than workQueueLen allows.
var errFellBehind = errors.New("acp: the relay fell too far behind the agent's updates; the turn was stopped so that nothing is lost silently")

// workQueue is a session's FIFO of work for its pump goroutine, bounded.
//
// Why not let the SDK's notification goroutine call the Host directly: the
// SDK queues at most 1024 notifications and closes the connection when its
// handler falls further behind, so a relay slow to commit (Host.Emit blocks
// for back-pressure) would look like a crashed agent. Handlers only push
// here and return at once; the pump does the slow part. When even this
// queue is full the push fails, and the session stops the turn
// (errFellBehind).
type workQueue struct {
	q *queue.Queue[func()]
}

func newWorkQueue() *workQueue {
	return &workQueue{q: queue.New(queue.Options[func()]{MaxLen: workQueueLen})}
}

// push adds work without waiting. It fails with queue.ErrFull at the bound
// and queue.ErrClosed once closed (the work will never run).
func (q *workQueue) push(f func()) error { return q.q.TryPush(f) }

// pushWait adds work, waiting for room while ctx lasts: for a caller that
// is not the SDK's notification goroutine and may wait.
func (q *workQueue) pushWait(ctx context.Context, f func()) error { return q.q.Push(ctx, f) }

// close refuses new work; what is queued still runs.
func (q *workQueue) close() { q.q.Close() }

// run is the pump: it runs the queued work in order until the queue is
// closed and drained, then closes done.
func (q *workQueue) run(done chan<- struct{}) {
	defer close(done)
	var batch []func()
	for {
		var err error
		batch, err = q.q.PopAll(context.Background(), batch[:0])
		for i, f := range batch {
			f()
			batch[i] = nil // let the work's captures go
		}
		if err != nil {
			return // closed and drained
		}
	}
}
