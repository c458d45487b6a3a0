package acp

import "sync"

// workQueue is an unbounded FIFO of work for a session's pump goroutine.
//
// Why not let the SDK's notification goroutine call the Host directly: the
// SDK queues at most 1024 notifications and closes the connection when its
// handler falls further behind, so a relay slow to commit (Host.Emit blocks
// for back-pressure) would look like a crashed agent. Handlers only push
// here and return; the pump does the slow part.
type workQueue struct {
	mu     sync.Mutex
	items  []func()
	closed bool
	wake   chan struct{} // capacity 1
}

func newWorkQueue() *workQueue {
	return &workQueue{wake: make(chan struct{}, 1)}
}

// push adds work; false when the queue is closed (the work will never run).
func (q *workQueue) push(f func()) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, f)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// take waits for work; false means the queue is closed and empty.
func (q *workQueue) take() ([]func(), bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			items := q.items
			q.items = nil
			q.mu.Unlock()
			return items, true
		}
		if q.closed {
			q.mu.Unlock()
			return nil, false
		}
		q.mu.Unlock()
		<-q.wake
	}
}

// close refuses new work; what is queued still runs.
func (q *workQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run is the pump: it runs the queued work in order until the queue is
// closed and drained, then closes done.
func (q *workQueue) run(done chan<- struct{}) {
	defer close(done)
	for {
		items, ok := q.take()
		if !ok {
			return
		}
		for _, f := range items {
			f()
		}
	}
}
