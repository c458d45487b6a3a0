package relay

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/session"
)

// conversation is one conversation's state. The lock order is Relay.mu,
// then conversation.mu, then any of Relay.streamsMu, Relay.lifeMu, a conn's
// mu or the committer's queue; no conversation lock is taken under another.
// The conversation's ownership lock (own.mu) comes before its mu, and is
// never taken under Relay.mu.
//
// A method whose name ends in Locked is called with mu held and returns with
// it held, one ending in OwnLocked with own.mu held; every other method takes
// and releases them itself.
type conversation struct {
	r  *Relay
	id string

	// deleted: removed from the relay; a lookup makes a new one. Written
	// under mu, but atomic because canSubscribe reads it without mu.
	deleted atomic.Bool

	// own is who runs the conversation, this relay or another, and what
	// follows from it (ownership.go); its lock is taken before mu.
	own ownership

	mu sync.Mutex // guards every field below, and the fields of turn
	// title, mode, model, agent, createdAt and updatedAt are what the
	// store keeps. agent is the relay's agent label when the latest turn
	// started (agentLabel): the agent that ran it, which survives a
	// restart on another agent.
	title string
	mode  protocol.Mode
	model string
	agent string
	// workspace is where the conversation's agent works, fixed by its
	// first send (the zero one before): workspace.go; Dir() reads it.
	workspace history.Workspace
	createdAt time.Time
	updatedAt time.Time
	lastSeq   int64 // seq of the last event emitted (handed to the committer)
	sentSeq   int64 // seq of the last event fanned out
	streaming bool
	// preparing: the first send is fixing the workspace (a worktree being
	// made), without the lock; another send meanwhile is busy.
	preparing bool
	// preparingID is the clientId of the send that is preparing, which
	// copilot:subscribed names (starting): a client whose connection
	// dropped as it sent learns the relay has its prompt.
	preparingID string

	fromStore bool // loaded at start: the agent session is opened with Resume
	subs      []*subscriber

	sess       session.Session
	host       *host
	hadSession bool
	turn       *turn
	closing    chan struct{} // non-nil while the agent session is being closed
	// closeAgain: another copilot:close came while closing; it is
	// answered once that close is done (handlers.go, finishClose).
	closeAgain bool
	deleting   chan struct{} // non-nil while the conversation is being deleted

	openInput  *inputRequest
	inputQueue []*inputRequest
	failure    storeFailure // a write of its events failed (storefail.go)
	// turnEndSeq is the seq of the copilot:idle that ended the latest
	// turn: when a failed write loses it, the relay sends another.
	turnEndSeq int64
	// restoring: a copilot:restore is putting the folder back; no turn
	// starts meanwhile. cpFailed: a snapshot failed and copilot:error
	// said so; said again only after one succeeded (checkpoints.go).
	restoring, cpFailed bool
	// lastReply is the turn's latest reply, which a push of its end may
	// carry (push.go).
	lastReply string

	// sent is the state after event sentSeq, which copilot:subscribed
	// describes (its seq is sentSeq): the events up to it have left, the
	// later ones follow. unsent holds the state changes of the events
	// handed to the committer and not fanned out yet, in seq order; most
	// events (deltas) change nothing and add nothing here.
	sent   moment
	unsent []momentAt
}

// moment is what copilot:subscribed and the list say of a conversation
// besides its seq.
type moment struct {
	title     string
	agent     string
	workspace history.Workspace
	mode      protocol.Mode
	streaming bool
	pending   *inputRequest // the open question
}

// momentAt is the state after event seq.
type momentAt struct {
	seq int64
	moment
}

// subscriber is one connection's subscription. While catchingUp, the
// connection is replaying stored events and the live ones wait in buffer.
// Its fields are guarded by the conversation's mu.
type subscriber struct {
	conn       *conn
	catchingUp bool
	buffer     [][]byte
	reset      bool // copilot:subscribed says reset: the replay started over from seq 0
}

func newConversation(r *Relay, id string) *conversation {
	now := time.Now()
	c := &conversation{r: r, id: id, mode: protocol.ModeAct, createdAt: now, updatedAt: now}
	// In a cluster a conversation is another relay's until this one claims
	// it (ownership.go).
	c.own.here = r.cluster == nil
	c.sent = c.momentLocked()
	return c
}

// momentLocked is the state now, after event lastSeq.
func (c *conversation) momentLocked() moment {
	return moment{title: c.title, agent: c.agent, workspace: c.workspace, mode: c.mode, streaming: c.streaming, pending: c.openInput}
}

// markMomentLocked records the state after event seq, just emitted, if it
// differs from the state after the event before it.
func (c *conversation) markMomentLocked(seq int64) {
	prev := c.sent
	if n := len(c.unsent); n > 0 {
		prev = c.unsent[n-1].moment
	}
	if now := c.momentLocked(); now != prev {
		c.unsent = append(c.unsent, momentAt{seq, now})
	}
}

// sentUpToLocked moves sent to the state after event seq, fanned out now.
// The connections that watch the list hear of a change of what it shows:
// the conversation appears with its first event, and its title, mode,
// streaming and open question are the ones of the events sent.
func (c *conversation) sentUpToLocked(seq int64) {
	listed, before := c.sentSeq > 0, c.sent
	c.sentSeq = seq
	i := 0
	for i < len(c.unsent) && c.unsent[i].seq <= seq {
		c.sent = c.unsent[i].moment
		i++
	}
	c.unsent = slices.Delete(c.unsent, 0, i)
	if !listed || c.sent != before {
		c.r.watch.noteLocked(c)
	}
}

// withConversation calls fn with the lock of the conversation named id held,
// creating the conversation if needed. A conversation being deleted is
// waited for, so that fn sees the new one. It returns ctx's error if ctx ends
// while waiting, and then fn is not called.
func (r *Relay) withConversation(ctx context.Context, id string, fnLocked func(c *conversation)) error {
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
				return ctx.Err()
			}
			continue
		}
		fnLocked(c)
		c.mu.Unlock()
		return nil
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
	if c.deleted.Load() || c.lastSeq != 0 || len(c.subs) != 0 || c.streaming || c.preparing || c.sess != nil ||
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
		Agent:     c.agent,
		Workspace: c.workspace,
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
	if !c.own.here {
		// Another relay runs it: what is left of a turn this relay lost
		// would be refused by the store anyway (cluster.go).
		c.r.log.Debug("relay: event of a conversation another relay owns dropped", "conversationId", c.id, "type", msgType)
		return
	}
	if c.deleted.Load() {
		c.r.log.Debug("relay: event of a deleted conversation dropped", "conversationId", c.id, "type", msgType)
		return
	}
	if c.failure.failed && !keptWhenFailed(msgType) {
		c.r.log.Debug("relay: event dropped: the conversation's history could not be saved", "conversationId", c.id, "type", msgType)
		return
	}
	seq := c.lastSeq + 1
	*hdr = protocol.Header{ConversationID: c.id, Seq: seq}
	frame, err := protocol.Encode(msgType, data)
	if err != nil {
		c.r.log.Error("relay: encode an event", "conversationId", c.id, "type", msgType, "err", err)
		return
	}
	if len(frame) > protocol.MaxFrameBytes {
		if frame = c.shortenLocked(msgType, data, len(frame)); frame == nil {
			return
		}
	}
	c.lastSeq = seq
	c.updatedAt = time.Now()
	c.markMomentLocked(seq)
	c.pushEventLocked(msgType, data) // push.go
	if c.failure.failed {
		c.addTailLocked(history.Event{ConversationID: c.id, Seq: seq, Type: msgType, Frame: frame})
		return
	}
	if !c.r.commit.push(record{kind: recEvent, conv: c, gen: c.failure.gen, lost: c.own.losses.Load(), seq: seq, typ: msgType, frame: frame, meta: c.metaLocked()}) {
		c.r.log.Warn("relay: event after shutdown dropped", "conversationId", c.id, "type", msgType)
	}
}

// shortenLocked makes an event that encoded to size bytes, over the frame
// limit, fit (frames.go) and returns its new frame. An event it cannot
// shorten is dropped, and copilot:error says so: a frame no client can read
// would stop every client that follows the conversation.
func (c *conversation) shortenLocked(msgType string, data any, size int) []byte {
	if fitEvent(msgType, data, size) {
		frame, err := protocol.Encode(msgType, data)
		if err == nil && len(frame) <= protocol.MaxFrameBytes {
			c.r.log.Warn("relay: an event over the frame limit was shortened", "conversationId", c.id, "type", msgType, "bytes", size, "now", len(frame))
			return frame
		}
	}
	c.r.log.Error("relay: an event over the frame limit was dropped", "conversationId", c.id, "type", msgType, "bytes", size)
	c.emitErrorLocked(fmt.Sprintf("the agent sent a %s of %d bytes, over the %d-byte frame limit; it was dropped", msgType, size, protocol.MaxFrameBytes))
	return nil
}

// emitErrorLocked emits copilot:error.
func (c *conversation) emitErrorLocked(msg string) {
	d := protocol.AgentError{Message: msg}
	c.emitLocked(protocol.TypeAgentError, &d.Header, &d)
}

// deliver is called by the committer with a run of this conversation's
// frames, in seq order, once they are stored.
func (c *conversation) deliver(frames [][]byte, lastSeq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sent := c.sentSeq - (lastSeq - int64(len(frames))); sent > 0 {
		// Delivered already: a conversation this relay stopped owning
		// while its last events were being stored gets them from the
		// cluster too (cluster.go), whichever comes first.
		if sent >= int64(len(frames)) {
			return
		}
		frames = frames[sent:]
	}
	c.sentUpToLocked(lastSeq)
	c.fanOutLocked(frames)
	if t := c.turn; t != nil && c.sentSeq >= t.startSeq {
		t.settleStartLocked(c, false)
	}
}

// fanOutLocked queues frames for every subscriber, as one run that they
// all share (outRun): the caller must not change the slice afterwards. One
// that is replaying gets them after its replay.
func (c *conversation) fanOutLocked(frames [][]byte) {
	if len(frames) == 0 {
		return
	}
	run := newRun(frames)
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
		s.conn.enqueueRun(run)
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
	if c.sentSeq > 0 {
		c.r.watch.noteLocked(c) // the watchers drop it from their lists
	}
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

// subscribedLocked is the copilot:subscribed frame: seq is the last event
// sent, so live events follow it with no gap, and the mode, streaming and
// the open question are as they were after that event, not as they are
// now: events emitted and not yet sent (waiting for their commit) follow
// the frame and change them then. reset says that the replay before it
// started over from seq 0.
func (c *conversation) subscribedLocked(reset bool) []byte {
	d := protocol.Subscribed{
		ConversationID: c.id,
		Mode:           c.sent.mode,
		Streaming:      c.sent.streaming,
		Seq:            c.sentSeq,
		Epoch:          c.r.epoch,
		Reset:          reset,
		ServerTime:     protocol.FormatTime(time.Now()), // the clock expiresAt is on
		Workspace:      protocolWorkspace(c.sent.workspace),
	}
	if p := c.sent.pending; p != nil {
		data := p.data
		d.PendingInput = &data
	}
	d.Starting = c.startingLocked()
	frame, err := protocol.Encode(protocol.TypeSubscribed, &d)
	if err != nil {
		c.r.log.Error("relay: encode copilot:subscribed", "err", err)
	}
	return frame
}

// startingLocked is copilot:subscribed's starting: the send that is
// setting up a turn whose copilot:user_message the subscriber has not had
// (its folder being made, or its echo waiting for its write), nil when
// there is none. Unlike the rest of the frame it says how things are now,
// not after seq: the echo follows the frame in either case.
func (c *conversation) startingLocked() *protocol.Starting {
	switch {
	case c.preparing:
		return &protocol.Starting{ClientID: c.preparingID}
	case c.startUnsentLocked():
		return &protocol.Starting{ClientID: c.turn.clientID}
	}
	return nil
}

// replay is what subscribeLocked leaves to catchUp: the stored events after
// since, up to upTo, go to the subscriber before it joins the live stream.
type replay struct {
	sub   *subscriber
	since int64
	upTo  int64
}

// subscribeLocked makes cn a subscriber. epoch is the epoch of the client's
// copy of the conversation ("" when it holds none). The relay decides: a
// copy of another epoch belongs to another history, whose seqs mean nothing
// here, so the replay starts over from seq 0 whatever since says, and
// copilot:subscribed says reset for the client to replace its copy.
//
// Without a replay to do (no since, or nothing after it) copilot:subscribed
// is queued now and the result is nil; otherwise the caller runs catchUp
// with the result once the lock is released, and until then live events
// wait in the subscriber's buffer.
func (c *conversation) subscribeLocked(cn *conn, since *int64, epoch string) *replay {
	if i := c.findSubLocked(cn); i >= 0 {
		c.subs = slices.Delete(c.subs, i, i+1) // a new subscribe starts over
	}
	s := &subscriber{conn: cn}
	if epoch != "" && epoch != c.r.epoch {
		s.reset = true
		since = new(int64)
	}
	c.subs = append(c.subs, s)
	if since == nil || *since >= c.sentSeq {
		cn.enqueue(c.subscribedLocked(s.reset))
		return nil
	}
	s.catchingUp = true
	upTo, unstored := c.unstoredSinceLocked(*since) // sent but not stored yet: they follow the replay
	s.buffer = unstored
	return &replay{sub: s, since: *since, upTo: upTo}
}

// catchUp finishes what subscribeLocked started: the stored events of rp
// are replayed at the client's pace; then the live events buffered meanwhile
// and copilot:subscribed are queued under the lock, so live events follow
// with no gap and no repeat. It reports false if the conversation was deleted
// meanwhile (the caller subscribes to the new one).
func (c *conversation) catchUp(cn *conn, rp *replay) bool {
	s := rp.sub
	c.replayStored(cn, rp)

	for {
		buf, joined, deleted := c.joinLiveOrTakeBuffer(s)
		switch {
		case joined:
			return true
		case deleted:
			for _, f := range buf {
				cn.enqueueWait(f)
			}
			return false
		}
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

// joinLiveOrTakeBuffer ends a catch-up when the subscriber's buffer and
// copilot:subscribed fit in its connection's queue now: they are queued and
// joined is true. Otherwise it takes the buffer, for the caller to queue at
// the client's pace, and deleted says whether the conversation is gone.
func (c *conversation) joinLiveOrTakeBuffer(s *subscriber) (buf [][]byte, joined, deleted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	buf, s.buffer = s.buffer, nil
	if c.deleted.Load() {
		return buf, false, true
	}
	if s.conn.fits(len(buf) + 1) {
		s.conn.enqueueMany(buf)
		s.conn.enqueue(c.subscribedLocked(s.reset))
		s.catchingUp = false
		return nil, true, false
	}
	return buf, false, false
}
