// Package queue is a bounded FIFO queue for one or more producers and a
// consumer that takes everything queued at once: a connection's writer that
// sends a batch per syscall, a committer that writes a batch per
// transaction, an event pump.
//
// A producer that must never wait (it holds a lock, or a slow consumer is
// to be dropped rather than waited for) uses TryPush, which fails with
// ErrFull at the bound. One that may wait uses Push, which blocks while the
// queue is full, so that a slow consumer slows its producers down
// (back-pressure) instead of letting the queue grow. Push can be made to wait
// earlier than the bound (Options.WaitLen, Options.WaitBytes), which keeps
// room above for TryPush: a bulk producer yields to urgent ones.
//
// Besides the item count the queue can bound the bytes its items hold
// (Options.Size, Options.MaxBytes).
package queue

import (
	"context"
	"errors"
	"sync"
)

var (
	// ErrFull is returned by TryPush and TryPushAll when the items would
	// take the queue over one of its bounds.
	ErrFull = errors.New("queue: full")
	// ErrClosed is returned by the pushes once the queue is closed, and by
	// PopAll once it is closed and empty.
	ErrClosed = errors.New("queue: closed")
)

// Options configures a Queue. The zero value is an unbounded queue.
type Options[T any] struct {
	// MaxLen bounds the items: TryPush fails with ErrFull rather than go
	// over it. Zero means no bound.
	MaxLen int
	// MaxBytes bounds the sum of Size over the items, as MaxLen does the
	// count. Zero means no bound.
	MaxBytes int
	// Size is an item's size in bytes; nil counts every item as 0.
	Size func(T) int
	// Count is how many items an item counts as against MaxLen and
	// WaitLen, and in Len: an item that carries several things, each of
	// which the bound is about, counts each (a connection's run of frames
	// queued as one item is bounded by its frames). Nil counts every item
	// as 1.
	Count func(T) int
	// WaitLen and WaitBytes are where Push starts to wait: it appends only
	// while the queue holds fewer than WaitLen items and fewer than
	// WaitBytes bytes. Zero means MaxLen and MaxBytes; WaitLen is at most
	// MaxLen. Push looks at the bytes queued, not at the item's own size,
	// so that an item larger than the room left, or than MaxBytes, waits
	// for the queue to drain instead of waiting forever: the bytes can then
	// go over MaxBytes by that one item.
	WaitLen   int
	WaitBytes int
}

// Queue is a FIFO queue of T, safe for concurrent use. Create it with New.
type Queue[T any] struct {
	maxLen, maxBytes   int
	waitLen, waitBytes int
	size               func(T) int
	count              func(T) int

	// ready holds a token when an item may have arrived since the consumer
	// last looked; done is closed by Close. Neither needs mu.
	ready chan struct{}
	done  chan struct{}

	mu     sync.Mutex // guards items, n, bytes, closed, room, enough, enoughAt
	items  []T
	n      int // the sum of Count over items (len(items) without Count)
	bytes  int
	closed bool
	// room is closed, and set to nil, when items leave the queue or it
	// closes; a Push that has to wait makes it.
	room chan struct{}
	// enough is closed, and set to nil, once the queue holds enoughAt
	// items (or closes); WaitLen makes it.
	enough   chan struct{}
	enoughAt int
}

// New returns an empty queue.
func New[T any](opts Options[T]) *Queue[T] {
	q := &Queue[T]{
		maxLen:    max(opts.MaxLen, 0),
		maxBytes:  max(opts.MaxBytes, 0),
		waitLen:   max(opts.WaitLen, 0),
		waitBytes: max(opts.WaitBytes, 0),
		size:      opts.Size,
		count:     opts.Count,
		ready:     make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	if q.waitLen == 0 || (q.maxLen > 0 && q.waitLen > q.maxLen) {
		q.waitLen = q.maxLen
	}
	if q.waitBytes == 0 {
		q.waitBytes = q.maxBytes
	}
	return q
}

func (q *Queue[T]) sizeOf(v T) int {
	if q.size == nil {
		return 0
	}
	return q.size(v)
}

func (q *Queue[T]) countOf(v T) int {
	if q.count == nil {
		return 1
	}
	return q.count(v)
}

// fitsLocked reports whether n items of the given bytes stay within the
// bounds.
func (q *Queue[T]) fitsLocked(n, bytes int) bool {
	return (q.maxLen == 0 || q.n+n <= q.maxLen) &&
		(q.maxBytes == 0 || q.bytes+bytes <= q.maxBytes)
}

// roomLocked reports whether Push may append now.
func (q *Queue[T]) roomLocked() bool {
	return (q.waitLen == 0 || q.n < q.waitLen) &&
		(q.waitBytes == 0 || q.bytes < q.waitBytes)
}

// appendUnlock appends vs, of the given count and bytes, unlocks q.mu
// and, when the queue was empty, tells a waiting consumer: the signal goes
// out of the lock, so the consumer it wakes does not wait for it.
func (q *Queue[T]) appendUnlock(n, bytes int, vs ...T) {
	first := len(q.items) == 0
	q.items = append(q.items, vs...)
	q.n += n
	q.bytes += bytes
	if q.enough != nil && q.n >= q.enoughAt {
		close(q.enough)
		q.enough = nil
	}
	q.mu.Unlock()
	if first {
		q.signal()
	}
}

// signal tells a waiting consumer that items arrived.
func (q *Queue[T]) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// wakePushersLocked lets the Pushes waiting for room look again.
func (q *Queue[T]) wakePushersLocked() {
	if q.room != nil {
		close(q.room)
		q.room = nil
	}
}

// TryPush appends v without waiting. It fails with ErrFull if v would take
// the queue over MaxLen or MaxBytes, and with ErrClosed once it is closed.
func (q *Queue[T]) TryPush(v T) error {
	return q.tryAppend(q.countOf(v), q.sizeOf(v), v)
}

// TryPushAll appends vs, in order, without waiting: all of them or, with
// ErrFull or ErrClosed, none.
func (q *Queue[T]) TryPushAll(vs []T) error {
	if len(vs) == 0 {
		return nil
	}
	n, bytes := len(vs), 0
	if q.count != nil {
		n = 0
		for _, v := range vs {
			n += q.count(v)
		}
	}
	if q.size != nil {
		for _, v := range vs {
			bytes += q.size(v)
		}
	}
	return q.tryAppend(n, bytes, vs...)
}

// tryAppend is TryPush and TryPushAll: it appends vs, n items of bytes
// bytes in all, unless the queue is closed or they would take it over
// MaxLen or MaxBytes.
func (q *Queue[T]) tryAppend(n, bytes int, vs ...T) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	if !q.fitsLocked(n, bytes) {
		q.mu.Unlock()
		return ErrFull
	}
	q.appendUnlock(n, bytes, vs...)
	return nil
}

// Push appends v, waiting while the queue holds WaitLen items or WaitBytes
// bytes. It fails with ErrClosed once the queue is closed (a Push waiting
// then returns at once), or with ctx's error when ctx ends first; v is then
// not queued.
func (q *Queue[T]) Push(ctx context.Context, v T) error {
	n, bytes := q.countOf(v), q.sizeOf(v)
	if err := q.lockRoom(ctx); err != nil {
		return err
	}
	q.appendUnlock(n, bytes, v)
	return nil
}

// WaitRoom waits until Push would append without waiting. It returns
// ErrClosed if the queue is or gets closed, or ctx's error.
func (q *Queue[T]) WaitRoom(ctx context.Context) error {
	if err := q.lockRoom(ctx); err != nil {
		return err
	}
	q.mu.Unlock()
	return nil
}

// lockRoom waits until Push may append and returns with mu held, or with
// it released and ErrClosed or ctx's error.
func (q *Queue[T]) lockRoom(ctx context.Context) error {
	q.mu.Lock()
	for {
		if q.closed {
			q.mu.Unlock()
			return ErrClosed
		}
		if q.roomLocked() {
			return nil
		}
		if err := q.waitRoom(ctx); err != nil {
			return err
		}
		q.mu.Lock()
	}
}

// waitRoom is called with mu held and returns with it released, once items
// left the queue or it closed, or with ctx's error.
func (q *Queue[T]) waitRoom(ctx context.Context) error {
	if q.room == nil {
		q.room = make(chan struct{})
	}
	room := q.room
	q.mu.Unlock()
	select {
	case <-room:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PopAll waits until the queue holds items and takes all of them, oldest
// first. dst is the consumer's previous batch, or nil: its items are cleared
// at once (so that a consumer waiting here holds no reference to what it
// sent) and the queue keeps its array for the items that follow, so that a
// consumer handing back every batch allocates nothing in a steady state;
// dst must not be used after the call. PopAll returns ErrClosed once the
// queue is closed and empty, or ctx's error.
func (q *Queue[T]) PopAll(ctx context.Context, dst []T) ([]T, error) {
	clear(dst)
	dst = dst[:0]
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			out := q.items
			q.items = dst
			q.n, q.bytes = 0, 0
			q.wakePushersLocked()
			q.mu.Unlock()
			return out, nil
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return dst, ErrClosed
		}
		select {
		case <-q.ready:
		case <-q.done:
		case <-ctx.Done():
			return dst, ctx.Err()
		}
	}
}

// WaitLen waits until the queue holds at least n items (as Count counts
// them), or it is closed, or ctx ends (it returns ctx's error then). Unlike
// PopAll it is woken once, when the count reaches n, not by every item
// before: a consumer that gathers items into bigger batches is not woken
// for each. It is for the one consumer: two WaitLens at once are not
// supported.
func (q *Queue[T]) WaitLen(ctx context.Context, n int) error {
	q.mu.Lock()
	if q.n >= n || q.closed {
		q.mu.Unlock()
		return nil
	}
	q.enough, q.enoughAt = make(chan struct{}), n
	enough := q.enough
	q.mu.Unlock()
	select {
	case <-enough:
		return nil
	case <-q.done:
		return nil
	case <-ctx.Done():
		q.mu.Lock()
		if q.enough == enough {
			q.enough = nil
		}
		q.mu.Unlock()
		return ctx.Err()
	}
}

// TakeAll appends every item queued to dst, oldest first, without
// waiting, and returns it. Unlike PopAll it keeps the queue's array (dst
// is the consumer's, to add to).
func (q *Queue[T]) TakeAll(dst []T) []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return dst
	}
	dst = append(dst, q.items...)
	clear(q.items)
	q.items = q.items[:0]
	q.n, q.bytes = 0, 0
	q.wakePushersLocked()
	return dst
}

// Close closes the queue: every push fails with ErrClosed from now on, and
// the pushes waiting return it. The items queued stay for PopAll, which
// returns ErrClosed once they are taken. Only the first call has an effect.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closeLocked()
}

// CloseDiscard closes the queue as Close does and drops the items queued.
func (q *Queue[T]) CloseDiscard() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closeLocked()
	clear(q.items)
	q.items = q.items[:0]
	q.n, q.bytes = 0, 0
}

// CloseIfEmpty closes the queue if it holds no item, atomically, and reports
// whether it is closed. A consumer that must accept pushes until it has
// drained everything stops with it.
func (q *Queue[T]) CloseIfEmpty() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) > 0 {
		return false
	}
	q.closeLocked()
	return true
}

func (q *Queue[T]) closeLocked() {
	if q.closed {
		return
	}
	q.closed = true
	close(q.done)
	q.wakePushersLocked()
}

// Stats is a snapshot of a queue.
type Stats struct {
	Len    int  // items queued, each counted as Options.Count says
	Bytes  int  // the sum of Options.Size over them
	Closed bool // Close or CloseDiscard was called
}

// Stats returns the queue's state now, read at once.
func (q *Queue[T]) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return Stats{Len: q.n, Bytes: q.bytes, Closed: q.closed}
}

// Len returns the number of items queued, each counted as Options.Count
// says.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}
