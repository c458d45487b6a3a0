package relay

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/queue"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// maxPending bounds the records waiting for the committer; an agent that
// emits faster than the store can write waits in Host.Emit.
const maxPending = 1 << 16

// maxCommitEvents caps the events of one Store.Write, so that a burst is
// written and fanned out in slices that overlap (the writers send one slice
// while the store writes the next) instead of waiting for one long write.
const maxCommitEvents = 512

// groupMin is the fewest events a commit carries without waiting for more
// (gather): a commit costs a fixed amount (the store's write, and the
// wake-ups of its appenders, of the NATS client and of the committer, 230–
// 500 µs a commit on the cluster, docs/scale-out.md) besides its events;
// from about 8 events on, that is a small part of what their fan-out costs.
const groupMin = 8

// slowCommit is the shortest store write after which a small batch waits
// (gather): a store in memory (tens of µs a write) makes the relay commit
// as events come, at no cost in latency; one that takes a round trip, to
// a NATS node (0.3 ms embedded, 0.5–20 ms to an R3 stream's replicas) or
// to the disk's fsync, is where a relay with few events commits as often
// as the store answers.
const slowCommit = 250 * time.Microsecond

type recordKind uint8

const (
	recEvent  recordKind = iota // store the frame, then fan it out
	recDelete                   // delete the conversation from the store, then tell its subscribers
	recStop                     // stop once everything queued is done (committer.stop)
	recSync                     // close done once everything queued before it is done (committer.sync)
)

// record is one unit of work for the committer.
type record struct {
	kind  recordKind
	conv  *conversation
	gen   uint64 // the conversation's gen when the event was made (storefail.go)
	lost  uint64 // the conversation's losses when the event was made (cluster.go)
	seq   int64
	typ   string
	frame []byte
	meta  history.Conversation // the conversation after this event
	done  chan error           // recDelete: the outcome; recSync: closed
}

// committer is the one goroutine that writes conversation events to the
// store and then hands them to the subscribers (group commit): it takes every
// record queued, from every conversation, writes them in one Store.Write and
// fans the frames out in order. No frame leaves before the write that holds it
// returned; while one write runs, the next batch gathers.
type committer struct {
	r *Relay
	// ctx is given to the store; it ends only when Close gives up waiting
	// for the flush, so that a stuck store cannot keep the goroutine.
	ctx    context.Context
	cancel context.CancelFunc

	// queue has no hard bound: the emitters hold a conversation's lock and
	// must not wait (push). Host.Emit waits for room before it takes that
	// lock (waitSpace), which bounds it at maxPending records but for the
	// few events one agent event makes. It is closed once the committer
	// has stopped.
	queue *queue.Queue[record]
	done  chan struct{}

	// Owned by the committer goroutine.
	events []history.Event
	metas  []history.Conversation
	index  map[*conversation]int

	// A failing store (storefail.go). down is set by the committer
	// goroutine from the first failed write until every conversation it
	// failed is stored again; copilot:send reads it to refuse new turns.
	down atomic.Bool
	// The rest is owned by the committer goroutine.
	guard    history.UnstoredGuard      // nil: the store has none
	marked   bool                       // the guard says unstored events may be sent, for this failure
	failed   map[*conversation]struct{} // conversations whose unstored events wait for the store
	retryAt  time.Time                  // the next attempt to store them
	backoff  time.Duration              // the wait after the next failed attempt
	lastWarn time.Time                  // when it last logged that the store still fails
	// fenced: some conversation lost to another relay (cluster.go), so
	// records may be stale even with no failure. The committer's own.
	fenced bool
	// lastPop is when the committer last took a batch, and streaming
	// whether it held deltas alone (spaceWrites). The committer's own.
	lastPop   time.Time
	streaming bool
	// wake ends spaceWrites' wait: push sends to it (without blocking)
	// for anything but a delta.
	wake chan struct{}
	// lastStart is when the last commit began, and lastWrite how long its
	// Store.Write took (gather). The committer's own.
	lastStart time.Time
	lastWrite time.Duration
}

func newCommitter(r *Relay) *committer {
	c := &committer{
		r: r,
		queue: queue.New(queue.Options[record]{WaitLen: maxPending, Count: func(rec record) int {
			if rec.kind != recEvent {
				// A sync, a delete or a stop is enough for a committer
				// gathering a small batch to take it at once (gather).
				return groupMin
			}
			return 1
		}}),
		done:   make(chan struct{}),
		index:  map[*conversation]int{},
		failed: map[*conversation]struct{}{},
		wake:   make(chan struct{}, 1),
	}
	c.guard, _ = r.store.(history.UnstoredGuard)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

// push queues a record. It never blocks (callers hold a conversation's lock);
// it reports false once the committer has stopped.
func (c *committer) push(rec record) bool {
	if c.queue.TryPush(rec) != nil {
		return false
	}
	if c.r.commitInterval > 0 && !isDelta(rec) {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// isDelta reports whether rec is a streaming reply's delta, which
// spaceWrites may hold back.
func isDelta(rec record) bool { return rec.kind == recEvent && rec.typ == protocol.TypeDelta }

// waitSpace blocks while the queue is full. Callers must not hold a
// conversation's lock (the committer needs it to fan out).
func (c *committer) waitSpace() {
	_ = c.queue.WaitRoom(context.Background()) // ErrClosed: stopped, push will say so
}

// sync waits until everything queued now has been written (or has
// failed) and fanned out, or ctx ends. It reports false if the committer
// has stopped or ctx ended first.
func (c *committer) sync(ctx context.Context) bool {
	done := make(chan error)
	if !c.push(record{kind: recSync, done: done}) {
		return false
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// stop makes the committer finish what is queued and exit; done is closed
// then. Records pushed meanwhile, by the fan-out of that work, are done too.
func (c *committer) stop() {
	c.push(record{kind: recStop})
}

func (c *committer) run() {
	defer close(c.done)
	defer c.cancel()
	var batch []record
	stopping := false
	for {
		if stopping && c.queue.CloseIfEmpty() {
			c.lastRetry()
			c.saveSpend()
			return
		}
		c.spaceWrites()
		var err error
		batch, err = c.pop(batch)
		c.lastPop = time.Now()
		if errors.Is(err, context.DeadlineExceeded) {
			c.retry()
			continue
		}
		if err != nil {
			return // closed: cannot happen before CloseIfEmpty above
		}
		if !stopping {
			batch = c.gather(batch)
		}
		c.streaming = len(batch) > 0 && !slices.ContainsFunc(batch, func(r record) bool { return !isDelta(r) })
		if c.process(batch) {
			stopping = true
		}
		if cap(batch) > 4*maxPending/64 && len(batch) < 64 {
			batch = nil // a burst's array is not kept
		}
	}
}

// spaceWrites waits, with Config.CommitInterval set and the last batch a
// streaming reply's deltas alone, until that long after the committer took
// it, so that the deltas that come meanwhile are written and fanned out
// together. Anything else queued (the turn's next tool call or its end, a
// sync, a stop) ends the wait: only deltas are ever held back, so the
// relay's other messages (copilot:budget, 100 ms after a spend) keep their
// place after the events that led to them.
//
// It ends by taking the wake-up of a record pushed by then, which the pop
// that follows takes too, so that it does not cut the next wait short.
func (c *committer) spaceWrites() {
	if c.r.commitInterval <= 0 {
		return
	}
	defer func() {
		select {
		case <-c.wake:
		default:
		}
	}()
	wait := c.r.commitInterval - time.Since(c.lastPop)
	if !c.streaming || wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.wake:
	}
}

// process handles a batch in order: runs of events are committed together;
// a delete is done between them. It reports whether the batch asked the
// committer to stop.
func (c *committer) process(batch []record) (stop bool) {
	for i := 0; i < len(batch); {
		j := i
		for j < len(batch) && batch[j].kind == recEvent {
			j++
		}
		for k := i; k < j; k += maxCommitEvents {
			c.commit(batch[k:min(j, k+maxCommitEvents)])
		}
		if j < len(batch) {
			switch batch[j].kind {
			case recDelete:
				c.delete(batch[j])
			case recStop:
				stop = true
			case recSync:
				close(batch[j].done)
			}
			j++
		}
		i = j
	}
	return stop
}

// pop takes everything queued. While conversations wait for a failing
// store, it waits only until the next retry, and then returns
// context.DeadlineExceeded.
func (c *committer) pop(batch []record) ([]record, error) {
	if len(c.failed) == 0 {
		return c.queue.PopAll(context.Background(), batch)
	}
	ctx, cancel := context.WithDeadline(context.Background(), c.retryAt)
	defer cancel()
	return c.queue.PopAll(ctx, batch)
}

// gather lets a small batch wait for more events before it is committed.
// The committer commits as soon as the previous write returned, so a relay
// commits as often as its store answers (70–80 times a second on an R3
// JetStream stream) however few events it has: a relay with a third of a
// cluster's conversations made three times the commits of one relay with
// all of them, a third as full, and paid each commit's fixed cost (issue
// #32). After a store write that took slowCommit or more, a batch of
// fewer than groupMin events, and of events only (a sync, a delete or a
// stop goes at once, and ends the wait), waits until the window
// (Config.CommitWindow) has passed since the previous commit began, or
// until groupMin events are queued, whichever comes first; then it takes
// what came meanwhile. An event therefore waits at most the window in all
// before its commit begins when it came after the previous commit began,
// and a lone event after a quiet spell does not wait at all. While a store
// fails nothing waits (retries have their own pace).
func (c *committer) gather(batch []record) []record {
	window := c.r.commitWindow
	if window <= 0 || c.lastWrite < slowCommit || len(c.failed) > 0 || len(batch) >= groupMin {
		return batch
	}
	for _, rec := range batch {
		if rec.kind != recEvent {
			return batch
		}
	}
	until := c.lastStart.Add(window)
	if !time.Now().Before(until) {
		return batch
	}
	ctx, cancel := context.WithDeadline(c.ctx, until)
	_ = c.queue.WaitLen(ctx, groupMin-len(batch)) // the deadline, or enough: take what there is
	cancel()
	return c.queue.TakeAll(batch)
}

// commit writes the events and the latest state of their conversations in
// one Store.Write, then fans them out. If the write fails the events are
// never sent, and their conversations fail (storefail.go): their seqs are
// handed out again, the turns stop with copilot:error and copilot:idle.
func (c *committer) commit(recs []record) {
	recs = c.dropStale(recs)
	if len(recs) == 0 {
		return
	}
	c.events = c.events[:0]
	c.metas = c.metas[:0]
	clear(c.index)
	for _, rec := range recs {
		c.events = append(c.events, history.Event{ConversationID: rec.conv.id, Seq: rec.seq, Type: rec.typ, Frame: rec.frame})
		if i, ok := c.index[rec.conv]; ok {
			c.metas[i] = rec.meta
		} else {
			c.index[rec.conv] = len(c.metas)
			c.metas = append(c.metas, rec.meta)
		}
	}
	// The spends reported so far go with these events (budget.go).
	spend := c.r.budget.take()
	c.lastStart = time.Now()
	err := c.r.store.Write(c.ctx, history.Batch{Events: c.events, Conversations: c.metas, Spend: spend})
	c.lastWrite = time.Since(c.lastStart)
	clear(c.events) // drop the frames' references
	var partial *history.PartialWriteError
	switch {
	case errors.As(err, &partial):
		// A store that commits each conversation on its own (JetStream)
		// stored the others: only the failed ones fail. The spend goes
		// with a later write, as after any failed one.
		c.r.budget.giveBack(spend)
		recs = c.dropFenced(recs, partial)
		if recs = c.failPartly(recs, partial); len(recs) == 0 {
			return
		}
	case err != nil:
		c.r.budget.giveBack(spend)
		c.fail(recs, len(c.metas), err)
		return
	case len(c.failed) > 0:
		c.retry() // the store writes again: store what waits for it now
	}
	for i := 0; i < len(recs); {
		conv := recs[i].conv
		j := i + 1
		for j < len(recs) && recs[j].conv == conv {
			j++
		}
		// A slice of its own for each run: the subscribers' queues keep
		// it (fanOutLocked).
		frames := make([][]byte, j-i)
		for k, rec := range recs[i:j] {
			frames[k] = rec.frame
		}
		conv.deliver(frames, recs[j-1].seq)
		i = j
	}
}

// delete removes a conversation from the store; on success its subscribers
// get copilot:deleted and it is forgotten, so a later subscribe finds it new.
func (c *committer) delete(rec record) {
	err := c.r.store.Delete(c.ctx, rec.conv.id)
	if err == nil && c.r.cluster != nil {
		// The other relays' subscribers get copilot:deleted too, and a
		// conversation of the same id is anyone's to start.
		c.r.cluster.Deleted(c.ctx, rec.conv.id)
		c.r.cluster.Release(c.ctx, rec.conv.id)
	}
	if err != nil {
		c.r.log.Error("relay: history store delete failed", "conversationId", rec.conv.id, "err", err)
	} else {
		rec.conv.finishDelete()
		c.forget(rec.conv)
	}
	rec.done <- err
}

// saveSpend stores, at shutdown, the spends no batch took: those reported
// after the last event, or with events that were never stored.
func (c *committer) saveSpend() {
	spend := c.r.budget.take()
	if len(spend) == 0 {
		return
	}
	if err := c.r.store.Write(c.ctx, history.Batch{Spend: spend}); err != nil {
		c.r.log.Error("relay: the AI credits spent could not be stored; the next start does not count them", "spends", len(spend), "err", err)
	}
}

// dropFenced handles the conversations of a partly failed write that
// another relay took over (history.ErrConflict: the fence), or that this
// relay could append to no more (history.ErrLeaseLost): they are lost to
// this relay, not failed (cluster.go). It returns recs without theirs,
// and takes them out of the write's failures.
func (c *committer) dropFenced(recs []record, partial *history.PartialWriteError) []record {
	lost := map[*conversation]bool{}
	for conv := range c.index {
		if err := partial.Failed[conv.id]; err != nil && c.r.lostToAnother(err) {
			lost[conv] = true
			conv.mu.Lock()
			conv.fencedLocked(err)
			conv.mu.Unlock()
			delete(partial.Failed, conv.id)
			delete(c.index, conv)
		}
	}
	if len(lost) == 0 {
		return recs
	}
	c.fenced = true
	kept := recs[:0]
	for _, rec := range recs {
		if !lost[rec.conv] {
			kept = append(kept, rec)
		}
	}
	return kept
}
