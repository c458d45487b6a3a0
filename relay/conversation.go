package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/session"
)

// conversation is one conversation's state. Everything in it is guarded by
// mu; the lock order is Relay.mu, then conversation.mu, then a conn's or the
// committer's lock.
type conversation struct {
	r  *Relay
	id string

	mu        sync.Mutex
	title     string
	mode      protocol.Mode
	model     string
	createdAt time.Time
	updatedAt time.Time
	lastSeq   int64 // seq of the last event emitted (handed to the committer)
	sentSeq   int64 // seq of the last event fanned out
	streaming bool
	fromStore bool // loaded at start: the agent session is opened with Resume
	subs      []*subscriber

	sess       session.Session
	host       *host
	hadSession bool
	turn       *turn
	closing    chan struct{} // non-nil while the agent session is being closed
	deleting   chan struct{} // non-nil while the conversation is being deleted
	deleted    atomic.Bool   // removed from the relay; a lookup makes a new one (atomic: read without mu by canSubscribe)

	openInput     *inputRequest
	inputQueue    []*inputRequest
	storeFailures bool // a store failure was reported and nothing stored since
}

// subscriber is one connection's subscription. While catchingUp, the
// connection is replaying stored events and the live ones wait in buffer.
type subscriber struct {
	conn       *conn
	catchingUp bool
	buffer     [][]byte
}

func newConversation(r *Relay, id string) *conversation {
	now := time.Now()
	return &conversation{r: r, id: id, mode: protocol.ModeAct, createdAt: now, updatedAt: now}
}

// lockConversation returns the conversation, locked, creating it if needed.
// A conversation being deleted is waited for, so the caller gets the new one.
func (r *Relay) lockConversation(ctx context.Context, id string) (*conversation, error) {
	for {
		r.mu.Lock()
		c := r.convs[id]
		if c == nil {
			c = newConversation(r, id)
			r.convs[id] = c
		}
		r.mu.Unlock()
		c.mu.Lock()
		if c.deleted.Load() {
			c.mu.Unlock()
			continue
		}
		if ch := c.deleting; ch != nil {
			c.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		return c, nil
	}
}

// lookupConversation returns a conversation the relay knows, or nil.
func (r *Relay) lookupConversation(id string) *conversation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.convs[id]
}

// forgetIfEmpty drops a conversation that has no event, no subscriber and no
// session, so that subscribing to random ids costs nothing lasting.
func (r *Relay) forgetIfEmpty(c *conversation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deleted.Load() || c.lastSeq != 0 || len(c.subs) != 0 || c.streaming || c.sess != nil ||
		c.closing != nil || c.deleting != nil || c.openInput != nil || c.fromStore {
		return
	}
	if r.convs[c.id] == c {
		delete(r.convs, c.id)
	}
	c.deleted.Store(true)
}

// metaLocked is what the store keeps about the conversation now.
func (c *conversation) metaLocked() history.Conversation {
	m := history.Conversation{
		ID:        c.id,
		Title:     c.title,
		Mode:      string(c.mode),
		CreatedAt: c.createdAt,
		UpdatedAt: c.updatedAt,
		LastSeq:   c.lastSeq,
		Streaming: c.streaming,
		Model:     c.model,
	}
	if c.openInput != nil {
		m.PendingInput = c.openInput.encoded
	}
	return m
}

// emitLocked makes a conversation event: the next seq, encoded once, handed
// to the committer, which stores it and then sends it to every subscriber.
// hdr is the Header embedded in data.
func (c *conversation) emitLocked(msgType string, hdr *protocol.Header, data any) {
	if c.deleted.Load() {
		c.r.log.Debug("relay: event of a deleted conversation dropped", "conversationId", c.id, "type", msgType)
		return
	}
	seq := c.lastSeq + 1
	*hdr = protocol.Header{ConversationID: c.id, Seq: seq}
	frame, err := protocol.Encode(msgType, data)
	if err != nil {
		c.r.log.Error("relay: encode an event", "conversationId", c.id, "type", msgType, "err", err)
		return
	}
	c.lastSeq = seq
	c.updatedAt = time.Now()
	if !c.r.commit.push(record{kind: recEvent, conv: c, seq: seq, typ: msgType, frame: frame, meta: c.metaLocked()}) {
		c.r.log.Warn("relay: event after shutdown dropped", "conversationId", c.id, "type", msgType)
	}
}

// emitError emits copilot:error.
func (c *conversation) emitErrorLocked(msg string) {
	d := protocol.AgentError{Message: msg}
	c.emitLocked(protocol.TypeAgentError, &d.Header, &d)
}

// deliver is called by the committer with a run of this conversation's
// frames, in seq order, once they are stored (storeErr nil) or failed to be.
func (c *conversation) deliver(frames [][]byte, lastSeq int64, storeErr error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sentSeq = lastSeq
	if storeErr != nil {
		if !c.storeFailures && !c.deleted.Load() {
			c.storeFailures = true
			c.emitErrorLocked(fmt.Sprintf("the relay could not save %d event(s) to its history, so they were not sent: %v", len(frames), storeErr))
		}
		return
	}
	c.storeFailures = false
	for _, s := range c.subs {
		if s.catchingUp {
			if len(s.buffer)+len(frames) > c.r.sendQueue {
				s.conn.closeWith(CloseTooSlow, "too far behind: reconnect and resume with sinceSeq", false)
				s.buffer = nil
				continue
			}
			s.buffer = append(s.buffer, frames...)
			continue
		}
		s.conn.enqueueMany(frames)
	}
}

// finishDelete runs on the committer once the store forgot the conversation:
// the subscribers get copilot:deleted and the relay forgets it.
func (c *conversation) finishDelete() {
	c.r.mu.Lock()
	if c.r.convs[c.id] == c {
		delete(c.r.convs, c.id)
	}
	c.r.mu.Unlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	c.deleted.Store(true)
	d := protocol.Deleted{Header: protocol.Header{ConversationID: c.id, Seq: c.lastSeq + 1}}
	frame, err := protocol.Encode(protocol.TypeDeleted, &d)
	if err != nil {
		c.r.log.Error("relay: encode copilot:deleted", "err", err)
		return
	}
	for _, s := range c.subs {
		if s.catchingUp {
			s.buffer = append(s.buffer, frame)
			continue
		}
		s.conn.enqueue(frame)
	}
	c.subs = nil
}

func (c *conversation) findSubLocked(cn *conn) int {
	return slices.IndexFunc(c.subs, func(s *subscriber) bool { return s.conn == cn })
}

func (c *conversation) unsubscribe(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := c.findSubLocked(cn); i >= 0 {
		c.subs = slices.Delete(c.subs, i, i+1)
	}
}

// subscribedLocked is the copilot:subscribed frame for the state now: seq is
// the last event sent, so live events follow it with no gap.
func (c *conversation) subscribedLocked() []byte {
	d := protocol.Subscribed{
		ConversationID: c.id,
		Mode:           c.mode,
		Streaming:      c.streaming,
		Seq:            c.sentSeq,
		Epoch:          c.r.epoch,
	}
	if c.openInput != nil {
		p := c.openInput.data
		d.PendingInput = &p
	}
	frame, err := protocol.Encode(protocol.TypeSubscribed, &d)
	if err != nil {
		c.r.log.Error("relay: encode copilot:subscribed", "err", err)
	}
	return frame
}

var errStopReplay = errors.New("replay done")

// subscribe makes cn a subscriber; c.mu is held on entry and released on
// return. With since, the stored events after it are replayed first, at the
// client's pace, while live events wait in the subscriber's buffer; then the
// buffer and copilot:subscribed are queued under the lock, so live events
// follow with no gap and no repeat. It reports false if the conversation was
// deleted meanwhile (the caller subscribes to the new one).
func (c *conversation) subscribe(cn *conn, since *int64) bool {
	if i := c.findSubLocked(cn); i >= 0 {
		c.subs = slices.Delete(c.subs, i, i+1) // a new subscribe starts over
	}
	s := &subscriber{conn: cn}
	c.subs = append(c.subs, s)
	if since == nil || *since >= c.sentSeq {
		cn.enqueue(c.subscribedLocked())
		c.mu.Unlock()
		return true
	}
	s.catchingUp = true
	upTo := c.sentSeq
	c.mu.Unlock()

	err := c.r.store.Events(cn.ctx, c.id, *since, func(e history.Event) error {
		if e.Seq > upTo {
			return errStopReplay
		}
		if !cn.enqueueWait(e.Frame) {
			return errConnClosed
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopReplay) && !errors.Is(err, errConnClosed) && cn.ctx.Err() == nil {
		c.r.log.Error("relay: replay from the history store failed", "conversationId", c.id, "err", err)
		cn.closeWith(websocket.StatusInternalError, "could not read the history: try again", false)
	}

	for {
		c.mu.Lock()
		if c.deleted.Load() {
			buf := s.buffer
			s.buffer = nil
			c.mu.Unlock()
			for _, f := range buf {
				cn.enqueueWait(f)
			}
			return false
		}
		if cn.fits(len(s.buffer) + 1) {
			cn.enqueueMany(s.buffer)
			cn.enqueue(c.subscribedLocked())
			s.catchingUp, s.buffer = false, nil
			c.mu.Unlock()
			return true
		}
		buf := s.buffer
		s.buffer = nil
		c.mu.Unlock()
		if len(buf) == 0 && !cn.waitSpace() {
			return true // the connection is closing; its cleanup unsubscribes
		}
		for _, f := range buf {
			if !cn.enqueueWait(f) {
				return true
			}
		}
	}
}

var errConnClosed = errors.New("connection closed")
