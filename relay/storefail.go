package relay

import (
	"errors"
	"fmt"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// A failing history store (a full disk) is an error everyone sees, and it
// never costs the seq contract (docs/reliability.md, A full or failing
// store). When a Store.Write fails:
//
//   - its events are never sent, and neither is anything queued after them
//     for the same conversations: each such conversation's seq goes back to
//     the last event it sent, so the events its clients get never skip;
//   - the conversation fails: its turn is aborted (the agent stops), and it
//     emits nothing but the copilot:error that says why and, when the turn
//     has stopped, the copilot:idle with status error. These two cannot be
//     stored yet. They are kept in memory (the tail), sent at once when the
//     store's guard records that clients may now hold seqs it does not
//     have (history.UnstoredGuard), and stored once writes succeed again;
//   - copilot:send is refused (error code limit) until every failed
//     conversation's tail is stored;
//   - the committer retries with backoff, and once the tails are stored it
//     clears the guard and everything works as before.
//
// If the relay stops before the tails are stored, the guard stays marked
// and the next start gives the history a new epoch, so no client ever takes
// a seq handed out again for one it already has.

// errStoreFailed cancels the turns of the conversations the store failed.
var errStoreFailed = errors.New("the relay could not save the conversation's history")

// The committer retries a failing store after retryMin, doubling the wait
// up to retryMax; warnEvery says how often it logs that it still fails.
const (
	retryMin  = 100 * time.Millisecond
	retryMax  = 2 * time.Second
	warnEvery = time.Minute
)

// storeFailure is a conversation's side of a failed store. Its fields are
// guarded by the conversation's mu, except that gen is written only by the
// committer goroutine (under mu), which may therefore read it without mu.
type storeFailure struct {
	failed bool            // a write failed; nothing but the tail is emitted until it is stored and the turn has ended
	gen    uint64          // bumped when the conversation fails: older records were made with seqs handed out again
	tail   []history.Event // the events emitted since the failure, not stored yet, in seq order
	sent   bool            // the tail goes to the subscribers before it is stored (the guard is marked)
	since  time.Time       // when the conversation failed
}

// keptWhenFailed says which events a failed conversation still emits: the
// report of the failure and the end of its turn.
func keptWhenFailed(msgType string) bool {
	return msgType == protocol.TypeAgentError || msgType == protocol.TypeIdle
}

// failStoreLocked fails the conversation: the events after sentSeq were not
// stored and will never be sent, so their seqs are handed out again; the
// turn is aborted and copilot:error says why. sendTail says whether the
// closing events may go out before they are stored.
func (c *conversation) failStoreLocked(err error, sendTail bool) bool {
	if c.deleted.Load() || c.failure.failed {
		return false
	}
	lost := c.lastSeq - c.sentSeq
	idleLost := c.turnEndSeq > c.sentSeq
	c.failure = storeFailure{failed: true, gen: c.failure.gen + 1, sent: sendTail, since: time.Now()}
	c.lastSeq = c.sentSeq
	c.unsent = nil // the states after events that will never be sent
	if t := c.turn; t != nil {
		t.settleStartLocked(c, false) // the turn ends with the error and idle kept below
	}
	c.r.log.Error("relay: a conversation's events could not be stored: its turn is stopped and the events were not sent",
		"conversationId", c.id, "lostEvents", lost, "lastSentSeq", c.sentSeq, "err", err)
	c.emitErrorLocked(fmt.Sprintf("The relay could not save this conversation's history (%v), so the turn was stopped and %d event(s) of it were not sent. New prompts are refused until the relay can write again; it keeps trying.", err, lost))
	if !c.abortLocked(errStoreFailed) && idleLost {
		// The turn had already ended, and its copilot:idle was among the
		// events that will never be sent (a fast turn): the clients saw
		// it start and would wait for its end for good. Its end is this
		// idle, kept with the error (exactly one idle per turn).
		idle := protocol.Idle{Status: protocol.StatusError}
		c.emitLocked(protocol.TypeIdle, &idle.Header, &idle)
	}
	return true
}

// addTailLocked keeps an event of a failed conversation until the store
// takes it, and sends it now if the guard allows.
func (c *conversation) addTailLocked(e history.Event) {
	c.failure.tail = append(c.failure.tail, e)
	if c.failure.sent {
		c.sentUpToLocked(e.Seq)
		c.fanOutLocked([][]byte{e.Frame})
	}
}

// tailLocked is what a retry writes for the conversation: its unstored
// events (the slice is never changed in place, only appended to and cut
// from the front, so the caller may read it after unlocking) and its state.
func (c *conversation) tailLocked() ([]history.Event, history.Conversation) {
	return c.failure.tail, c.metaLocked()
}

// tailStored is called by the committer once the first n events of the
// tail are stored. A tail held back is sent now. It reports whether the
// conversation is whole again: everything stored and its turn over.
func (c *conversation) tailStored(n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := &c.failure
	if n > 0 {
		stored := f.tail[:n:n]
		f.tail = f.tail[n:]
		if !f.sent {
			frames := make([][]byte, len(stored))
			for i, e := range stored {
				frames[i] = e.Frame
			}
			c.sentUpToLocked(stored[n-1].Seq)
			c.fanOutLocked(frames)
		}
	}
	if len(f.tail) > 0 || c.turn != nil || c.deleted.Load() {
		return false
	}
	c.r.log.Info("relay: a conversation's history is stored again", "conversationId", c.id, "failedFor", time.Since(f.since).Round(time.Millisecond))
	*f = storeFailure{gen: f.gen}
	return true
}

// unstoredSinceLocked splits a replay after since for a subscriber: the
// store holds the events up to upTo, and frames are the tail's events after
// since that were sent but are not stored yet, which the subscriber gets
// after the stored ones.
func (c *conversation) unstoredSinceLocked(since int64) (upTo int64, frames [][]byte) {
	f := &c.failure
	if !f.failed || !f.sent {
		return c.sentSeq, nil
	}
	upTo = c.sentSeq - int64(len(f.tail))
	for _, e := range f.tail {
		if e.Seq > since {
			frames = append(frames, e.Frame)
		}
	}
	return upTo, frames
}

// dropStale removes, in place, the records of conversations that failed
// or were lost after they were made: their seqs are handed out again.
func (c *committer) dropStale(recs []record) []record {
	if len(c.failed) == 0 && !c.fenced && c.r.losses.Load() == 0 {
		return recs
	}
	kept := recs[:0]
	for _, rec := range recs {
		// gen is the committer's own: no lock. A conversation lost since
		// the event was made is another relay's: the event is not written
		// even if this relay owns the conversation again by now, after a
		// takeover that read the stream without it.
		if rec.gen == rec.conv.failure.gen && rec.lost == rec.conv.own.losses.Load() {
			kept = append(kept, rec)
		}
	}
	clear(recs[len(kept):])
	return kept
}

// fail handles a failed write of recs, which touched convs conversations.
// The first failure marks the store's guard before anything unstored can
// be sent, and makes copilot:send refuse.
func (c *committer) fail(recs []record, convs int, err error) {
	c.r.storeTrouble.Store(time.Now().UnixNano())
	if !c.down.Load() {
		c.r.log.Error("relay: the history store cannot be written; the conversations it failed for stop with copilot:error, and copilot:send is refused until it writes again (retrying in the background)",
			"events", len(recs), "conversations", convs, "err", err)
		c.marked = false
		if c.guard != nil {
			if gerr := c.guard.MarkUnstored(); gerr != nil {
				c.r.log.Error("relay: could not record that events may be sent unstored; the failed conversations' closing events wait until they are stored", "err", gerr)
			} else {
				c.marked = true
			}
		}
		c.down.Store(true)
		c.backoff, c.lastWarn = retryMin, time.Now()
		c.retryAt = time.Now().Add(c.backoff)
	}
	var partial *history.PartialWriteError
	errors.As(err, &partial)
	for conv := range c.index { // every conversation of the batch
		cerr := err
		if partial != nil && partial.Failed[conv.id] != nil {
			cerr = partial.Failed[conv.id] // its own reason, not the others'
		}
		conv.mu.Lock()
		if conv.failStoreLocked(cerr, c.marked) {
			c.failed[conv] = struct{}{}
		}
		conv.mu.Unlock()
	}
	if len(c.failed) == 0 {
		// The batch's conversations were all deleted: nothing waits for
		// the store, and the next write will tell whether it works.
		c.endFailure()
	}
}

// failPartly handles a write that stored some conversations of its batch
// and not others (history.PartialWriteError): the failed ones fail as in
// fail, each with its own reason, and it returns the records of the others,
// which are stored and are to be delivered.
func (c *committer) failPartly(recs []record, partial *history.PartialWriteError) []record {
	var failed, stored []record
	for _, rec := range recs {
		if _, ok := partial.Failed[rec.conv.id]; ok {
			failed = append(failed, rec)
		} else {
			stored = append(stored, rec)
		}
	}
	for conv := range c.index {
		if _, ok := partial.Failed[conv.id]; !ok {
			delete(c.index, conv) // fail fails every conversation of c.index
		}
	}
	if len(c.index) > 0 {
		c.fail(failed, len(c.index), partial)
	}
	return stored
}

// retry stores the tails of the failed conversations in one write and
// sends those that were held back. On failure it waits longer before the
// next try.
func (c *committer) retry() {
	var b history.Batch
	var convs []*conversation
	var counts []int
	for conv := range c.failed {
		conv.mu.Lock()
		if conv.deleted.Load() {
			conv.mu.Unlock()
			delete(c.failed, conv)
			continue
		}
		tail, meta := conv.tailLocked()
		conv.mu.Unlock()
		if len(tail) > 0 {
			b.Events = append(b.Events, tail...)
			b.Conversations = append(b.Conversations, meta)
		}
		convs = append(convs, conv)
		counts = append(counts, len(tail))
	}
	b.Spend = c.r.budget.take()
	if len(b.Events) > 0 || len(b.Spend) > 0 {
		err := c.r.store.Write(c.ctx, b)
		var partial *history.PartialWriteError
		if errors.As(err, &partial) {
			// A store that commits each conversation on its own stored
			// the others: they are done, and one the stream moved on
			// from (its failed append was stored after all, or another
			// relay took it over) takes the stream's history: retried,
			// its tail would be refused for ever.
			c.r.budget.giveBack(b.Spend)
			b.Spend = nil
			for i, conv := range convs {
				cerr, failed := partial.Failed[conv.id]
				switch {
				case !failed:
					if conv.tailStored(counts[i]) {
						delete(c.failed, conv)
					}
				case c.r.lostToAnother(cerr):
					conv.mu.Lock()
					conv.fencedLocked(cerr)
					conv.mu.Unlock()
					delete(c.failed, conv)
				}
			}
			if len(c.failed) == 0 {
				c.recovered()
				return
			}
			err = partial
		}
		if err != nil {
			c.r.budget.giveBack(b.Spend)
			c.backoff = min(2*c.backoff, retryMax)
			c.retryAt = time.Now().Add(c.backoff)
			c.r.log.Debug("relay: the history store still fails", "err", err, "retryIn", c.backoff)
			if time.Since(c.lastWarn) >= warnEvery {
				c.lastWarn = time.Now()
				c.r.log.Warn("relay: the history store still cannot be written; copilot:send stays refused", "conversations", len(c.failed), "err", err)
			}
			return
		}
	}
	for i, conv := range convs {
		if conv.tailStored(counts[i]) {
			delete(c.failed, conv)
		}
	}
	c.backoff = retryMin
	c.retryAt = time.Now().Add(c.backoff) // a turn still stopping: look again soon
	if len(c.failed) == 0 {
		c.recovered()
	}
}

// recovered ends a failure once every failed conversation is stored again.
func (c *committer) recovered() {
	c.endFailure()
	c.r.log.Info("relay: the history store writes again; copilot:send is accepted again")
}

// endFailure clears the guard and lets copilot:send through again.
func (c *committer) endFailure() {
	if c.marked {
		if err := c.guard.ClearUnstored(); err != nil {
			// Harmless: the next start gives the history a new epoch.
			c.r.log.Warn("relay: could not clear the store's guard", "err", err)
		}
		c.marked = false
	}
	c.down.Store(false)
}

// forget drops a deleted conversation from the failed ones.
func (c *committer) forget(conv *conversation) {
	if _, ok := c.failed[conv]; !ok {
		return
	}
	delete(c.failed, conv)
	if len(c.failed) == 0 {
		c.recovered()
	}
}

// lastRetry is the committer's last chance, at shutdown, to store the tails.
func (c *committer) lastRetry() {
	if len(c.failed) == 0 {
		return
	}
	c.retry()
	if n := len(c.failed); n > 0 {
		if c.marked {
			c.r.log.Error("relay: stopping with events sent to clients that could not be stored; the next start gives the history a new epoch, and clients replay it", "conversations", n)
		} else {
			c.r.log.Error("relay: stopping with the closing events of failed conversations unstored and unsent", "conversations", n)
		}
	}
}
