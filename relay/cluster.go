package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// Several relays sharing one history (Config.Cluster; docs/scale-out.md).
//
// A conversation is owned by one relay: the one that runs its agent
// session, its input bridge and its turns, and appends its events. On
// every other relay it is remote (ownership.go): it emits nothing,
// its subscribers get the events the owner stored, as the cluster hands
// them over (Stored: in seq order, a gap read from the store), and
// copilot:subscribed and the list say what the last stored event says.
// A command for a remote conversation goes to its owner (forward.go), whose
// answer (an error, if any) goes back to the client.
//
// A relay becomes a conversation's owner when it needs it and no relay
// whose lease holds owns it: a command arrives (the first send of a new
// conversation), or a subscriber watches a conversation whose owner's
// lease lapsed with a turn or a question open. It takes over from what is
// stored (Latest): it closes the open question (user_input_closed,
// aborted) and the turn (idle, status error, "relay lost: …"), and serves
// the next command. It stops owning when an append is refused (another
// relay took the conversation over: the fence) or its own lease lapses:
// the turn stops without appending anything, the agent session closes,
// and the conversation is remote from then on.

// clusterHooks is the relay's side of its Cluster.
type clusterHooks struct{ r *Relay }

var _ history.ClusterHooks = clusterHooks{}

func (h clusterHooks) Command(ctx context.Context, cmd []byte) []byte {
	return h.r.runForwarded(ctx, cmd)
}

func (h clusterHooks) Stored(id string, events []history.Event, state history.Conversation) {
	r := h.r
	conv := r.lookupConversation(id)
	if conv == nil {
		// A conversation new to this relay: listed from now on.
		_ = r.withConversation(r.ctx, id, func(c *conversation) { conv = c })
		if conv == nil {
			return
		}
	}
	if err := r.applyStored(r.ctx, conv, events, state); err != nil {
		r.log.Warn("relay: could not catch up with a conversation another relay writes; its next event tries again", "conversationId", id, "err", err)
	}
}

func (h clusterHooks) Deleted(id string) {
	conv := h.r.lookupConversation(id)
	if conv == nil {
		return
	}
	conv.mu.Lock()
	remote := !conv.own.here
	conv.mu.Unlock()
	if remote {
		conv.finishDelete()
		h.r.track(&h.r.work, func() { h.r.refollow(conv) }) // not on the cluster's goroutine: it may wait for a Follow
	}
}

func (h clusterHooks) RelayGone(relayID string) {
	r := h.r
	// The conversations this relay's clients watch that the gone relay may
	// have left with a turn or a question open: claiming them is a
	// compare-and-set, so of all the relays that try, one wins; the others
	// find it the owner.
	// A watched conversation this relay could not catch up with (it lost
	// it while the store did not answer, and nobody wrote it since) may
	// show no turn although the gone relay left one open: it catches up
	// first (a quorum loss longer than the lease left such a turn open in
	// a make chaos run, quorum-loss seed 200).
	r.mu.Lock()
	var ids []string
	var behind []*conversation
	for id, c := range r.convs {
		c.mu.Lock()
		switch {
		case c.leftOpenLocked():
			ids = append(ids, id)
		case c.watchedRemoteLocked() && c.own.behind:
			behind = append(behind, c)
		}
		c.mu.Unlock()
	}
	r.mu.Unlock()
	for _, id := range ids {
		r.track(&r.work, func() { r.takeOverGone(id, relayID) })
	}
	for _, c := range behind {
		r.track(&r.work, func() {
			r.catchUp(c)
			if r.leftOpen(c.id) {
				r.takeOverGone(c.id, relayID)
			}
		})
	}
}

// leftOpenLocked reports whether the conversation is another relay's with
// a turn or a question open that a client here watches: if that relay is
// gone, this one takes it over and closes them.
func (c *conversation) leftOpenLocked() bool {
	return c.watchedRemoteLocked() && (c.sent.streaming || c.sent.pending != nil)
}

// takeOverWait bounds the tries at taking over one conversation whose
// relay is gone.
const takeOverWait = 2 * time.Minute

// takeOverGone claims a conversation that the gone relay may have left
// open, and takes it over. A try that fails (the store slow to answer, a
// leader election) is made again, a second later and then twice as long,
// up to 8 s, while the conversation is still left open here, for up to
// takeOverWait: given up at the first failure, its clients' turn stayed
// open for good.
func (r *Relay) takeOverGone(id, relayID string) {
	if r.isDraining() {
		return // another relay takes it
	}
	ctx, cancel := context.WithTimeout(r.ctx, takeOverWait)
	defer cancel()
	for wait := time.Second; ; wait = min(2*wait, 8*time.Second) {
		owner, err := r.routeCommand(ctx, id)
		if err == nil && owner == relayID {
			// A replica still serves the gone relay's key (or its TTL
			// has not ended at the server yet): it is not gone to the
			// claim yet. Taken for done, the turn it left stayed open.
			err = fmt.Errorf("relay %s still counts as alive", relayID)
		}
		if err == nil {
			return
		}
		if isNotVisible(err) {
			r.log.Warn("relay: a conversation whose relay is gone is not taken over here", "conversationId", id, "relay", relayID, "err", err)
			return
		}
		if ctx.Err() == nil && r.leftOpen(id) {
			r.log.Info("relay: taking over a conversation whose relay is gone failed; trying again", "conversationId", id, "relay", relayID, "err", err, "in", wait)
			select {
			case <-ctx.Done():
			case <-time.After(wait):
				continue
			}
		}
		r.log.Warn("relay: could not take over a conversation whose relay is gone", "conversationId", id, "relay", relayID, "err", err)
		return
	}
}

// leftOpen is leftOpenLocked for conversation id, false if it is not here.
func (r *Relay) leftOpen(id string) bool {
	c := r.lookupConversation(id)
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leftOpenLocked()
}

func (h clusterHooks) Reconnected() {
	r := h.r
	// Events published while the connection was down never came: the
	// watched conversations catch up from the store.
	r.mu.Lock()
	var convs []*conversation
	for _, c := range r.convs {
		c.mu.Lock()
		if c.watchedRemoteLocked() && !c.own.reconnectCatchUp {
			c.own.reconnectCatchUp = true
			convs = append(convs, c)
		}
		c.mu.Unlock()
	}
	r.mu.Unlock()
	// Record changes of the others may have been missed too.
	r.track(&r.work, r.repairList)
	for _, c := range convs {
		done := func() {
			c.mu.Lock()
			c.own.reconnectCatchUp = false
			c.mu.Unlock()
		}
		if !r.track(&r.work, func() {
			defer done()
			r.catchUp(c)
		}) {
			done() // shutting down: none runs
		}
	}
}

func (h clusterHooks) LeaseLost(stalled bool) {
	r := h.r
	if !stalled {
		// The store did not answer: a takeover soon after blames it, not
		// the relay it takes over from (troubledRecently). A relay that
		// was stalled itself found nothing wrong with the store, and a
		// turn it takes back is one a lost relay left.
		r.storeTrouble.Store(time.Now().UnixNano())
	}
	convs := r.allConversations()
	n := 0
	for _, c := range convs {
		c.mu.Lock()
		if c.own.here {
			if stalled {
				// What it had queued before its stall is never written,
				// even once it owns the conversation again: another
				// relay may have read the stream to take it over.
				// After a lapse in which the store was unreachable it
				// is (the fence refuses what another relay preceded):
				// dropped, a turn started just before a quorum loss
				// was never stored, and nobody closed it for its
				// sender (make chaos-style run, quorum-loss, seed 104).
				c.own.losses.Add(1) // before the next count: the committer drops what was queued
				c.r.losses.Add(1)
				if c.startUnsentLocked() {
					c.turn.settleStartLocked(c, true) // dropped with the rest
				}
			}
			c.loseLocked()
			n++
		}
		c.mu.Unlock()
	}
	why := "cut off from NATS for longer than the lease"
	if stalled {
		why = "the relay was stalled, its process paused, past the lease"
	}
	r.log.Error("relay: this relay's lease lapsed ("+why+"): it no longer owns its conversations; their turns stop, and other relays take them over", "conversations", n)
}

// catchUp brings a remote conversation up to what is stored now.
func (r *Relay) catchUp(c *conversation) {
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	state, err := r.cluster.Latest(ctx, c.id)
	if err == nil {
		err = r.applyStored(ctx, c, nil, state)
	}
	c.mu.Lock()
	c.own.behind = err != nil && !errors.Is(err, history.ErrNotFound)
	c.mu.Unlock()
	if errors.Is(err, history.ErrNotFound) {
		r.goneRemote(c)
		return
	}
	if err != nil && r.ctx.Err() == nil {
		r.log.Warn("relay: could not catch up with a conversation another relay writes; its next event tries again, or a relay's death", "conversationId", c.id, "err", err)
	}
}

// applyStored brings a remote conversation up to state: the events after
// the last one its subscribers got (events, or read from the store when
// events do not follow on from it), then the state.
func (r *Relay) applyStored(ctx context.Context, conv *conversation, events []history.Event, state history.Conversation) error {
	conv.own.mu.Lock()
	defer conv.own.mu.Unlock()
	return r.applyStoredOwnLocked(ctx, conv, events, state)
}

// applyStoredOwnLocked is applyStored with conv.own.mu held.
func (r *Relay) applyStoredOwnLocked(ctx context.Context, conv *conversation, events []history.Event, state history.Conversation) error {
	conv.mu.Lock()
	if conv.own.here || conv.deleted.Load() {
		conv.mu.Unlock()
		return nil
	}
	have := conv.sentSeq
	if len(conv.subs) == 0 {
		// Nobody here follows it: only the list needs its state, and a
		// subscriber who comes replays from the store.
		last := state.LastSeq
		if n := len(events); n > 0 {
			last = max(last, events[n-1].Seq)
		}
		conv.sentSeq = max(have, last)
		conv.lastSeq = conv.sentSeq
		if conv.sentSeq == state.LastSeq {
			conv.applyStateLocked(state, have > 0)
		}
		conv.mu.Unlock()
		return nil
	}
	conv.mu.Unlock()

	i := 0
	for i < len(events) && events[i].Seq <= have {
		i++ // delivered already
	}
	events = events[i:]
	target := state.LastSeq
	if n := len(events); n > 0 {
		target = max(target, events[n-1].Seq)
	}
	var err error
	if target > have && (len(events) == 0 || events[0].Seq != have+1) {
		// A gap: what this relay missed (dropped messages, a reconnect, a
		// frame in several messages) is in the store.
		var read []history.Event
		upTo := target
		if len(events) > 0 {
			upTo = events[0].Seq - 1
		}
		err = r.store.Events(ctx, conv.id, have, func(e history.Event) error {
			if e.Seq > upTo {
				return errStopReplay
			}
			e.Frame = append([]byte(nil), e.Frame...) // the store may reuse its buffer
			read = append(read, e)
			return nil
		})
		if errors.Is(err, errStopReplay) {
			err = nil
		}
		events = append(read, events...)
	}

	conv.mu.Lock()
	defer conv.mu.Unlock()
	if conv.own.here || conv.deleted.Load() {
		return nil
	}
	var frames [][]byte
	for _, e := range events {
		if e.Seq == conv.sentSeq+1 {
			frames = append(frames, e.Frame)
			conv.sentSeq = e.Seq
		}
	}
	conv.lastSeq = conv.sentSeq
	if conv.sentSeq >= state.LastSeq {
		conv.applyStateLocked(state, have > 0)
	}
	conv.fanOutLocked(frames)
	if err != nil {
		return err
	}
	if conv.sentSeq < target {
		return fmt.Errorf("the store had events up to seq %d of %d", conv.sentSeq, target)
	}
	return nil
}

// applyStateLocked makes a remote conversation's state the stored one:
// what copilot:subscribed and the list say of it.
// listed says whether the list showed it before; the connections that
// watch the list hear of a change of what it shows.
func (c *conversation) applyStateLocked(m history.Conversation, listed bool) {
	before := c.sent
	c.setStoredLocked(m)
	if !listed || c.sent != before {
		c.r.watch.noteLocked(c)
	}
}

// setStoredLocked makes the conversation's state the stored one.
func (c *conversation) setStoredLocked(m history.Conversation) {
	mode := protocol.Mode(m.Mode)
	if !mode.Valid() {
		mode = protocol.ModeAct
	}
	c.title, c.mode, c.model, c.agent, c.streaming = m.Title, mode, m.Model, m.Agent, m.Streaming
	c.workspace = m.Workspace
	if !m.CreatedAt.IsZero() {
		c.createdAt = m.CreatedAt
	}
	if !m.UpdatedAt.IsZero() {
		c.updatedAt = m.UpdatedAt
	}
	var pending *inputRequest
	if len(m.PendingInput) > 0 {
		var d protocol.UserInputRequest
		if err := json.Unmarshal(m.PendingInput, &d); err == nil {
			if p := c.sent.pending; p != nil && p.id == d.RequestID {
				pending = p
			} else {
				pending = &inputRequest{id: d.RequestID, data: d, encoded: m.PendingInput}
			}
		}
	}
	c.sent = moment{title: c.title, agent: c.agent, workspace: c.workspace, mode: mode, streaming: m.Streaming, pending: pending}
	c.unsent = nil
}

// syncRemote brings a remote conversation up to what is stored before a
// client subscribes to it here, and takes it over if its owner's lease
// lapsed with a turn or a question open.
func (r *Relay) syncRemote(ctx context.Context, id string) {
	if c := r.lookupConversation(id); c != nil && c.owned() {
		return
	}
	state, err := r.cluster.Latest(ctx, id)
	if errors.Is(err, history.ErrNotFound) {
		if c := r.lookupConversation(id); c != nil {
			r.goneRemote(c)
		}
		return
	}
	if err != nil {
		r.log.Warn("relay: could not read a conversation another relay writes", "conversationId", id, "err", err)
		return
	}
	var conv *conversation
	if err := r.withConversation(ctx, id, func(c *conversation) { conv = c }); err != nil {
		return
	}
	if err := r.applyStored(ctx, conv, nil, state); err != nil {
		r.log.Warn("relay: could not catch up with a conversation another relay writes", "conversationId", id, "err", err)
	}
	if !state.Streaming && len(state.PendingInput) == 0 {
		return
	}
	if owner, live, err := r.cluster.Owner(ctx, id); err == nil && (owner == "" || !live) {
		if _, err := r.routeCommand(ctx, id); err != nil {
			r.log.Warn("relay: could not take over a conversation whose relay is gone", "conversationId", id, "relay", owner, "err", err)
			return
		}
		// The subscriber sees the turn closed, as after a restart: the
		// closing events are stored and sent before it subscribes.
		conv.waitSent(ctx)
	}
}

// waitSent waits until every event the conversation emitted has been
// stored and sent, or ctx ends.
func (c *conversation) waitSent(ctx context.Context) {
	for {
		c.mu.Lock()
		done := !c.own.here || c.sentSeq >= c.lastSeq || c.failure.failed
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// goneRemote forgets a remote conversation that is no longer stored: it
// was deleted while this relay missed the notice (its connection was
// down). Its subscribers get copilot:deleted, as on the owner.
func (r *Relay) goneRemote(c *conversation) {
	c.mu.Lock()
	gone := !c.own.here && c.sentSeq > 0 && !c.deleted.Load()
	c.mu.Unlock()
	if gone {
		c.finishDelete()
		r.refollow(c)
	}
}
