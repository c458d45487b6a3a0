package relay

import (
	"cmp"
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
// every other relay it is remote (conversation.remote): it emits nothing,
// its subscribers get the events the owner stored, as the cluster hands
// them over (Stored: in seq order, a gap read from the store), and
// copilot:subscribed and the list say what the last stored event says.
// A command for a remote conversation goes to its owner (Forward), whose
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

// errLost cancels the turns of a conversation the relay no longer owns.
var errLost = errors.New("another relay took the conversation over")

// forwarded is a command one relay sends another: the client's request and
// who sent it.
type forwarded struct {
	Frame json.RawMessage `json:"frame"`
	By    *protocol.By    `json:"by,omitempty"`
}

// forwardReply is the owner's answer.
type forwardReply struct {
	Error    *protocol.Error `json:"error,omitempty"`
	NotOwner bool            `json:"notOwner,omitempty"` // ask again who owns it
}

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
	remote := conv.remote
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
		case c.remote && len(c.subs) > 0 && c.behind:
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
	return c.remote && len(c.subs) > 0 && (c.sent.streaming || c.sent.pending != nil)
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
		if c.remote && len(c.subs) > 0 && !c.reconnectCatchUp {
			c.reconnectCatchUp = true
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
			c.reconnectCatchUp = false
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
		if !c.remote {
			if stalled {
				// What it had queued before its stall is never written,
				// even once it owns the conversation again: another
				// relay may have read the stream to take it over.
				// After a lapse in which the store was unreachable it
				// is (the fence refuses what another relay preceded):
				// dropped, a turn started just before a quorum loss
				// was never stored, and nobody closed it for its
				// sender (make chaos-style run, quorum-loss, seed 104).
				c.losses.Add(1) // before the next count: the committer drops what was queued
				c.r.losses.Add(1)
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

// loseLocked makes an owned conversation remote: its turn stops without a
// word (its events would be refused: another relay may own it now), its
// questions are withdrawn, its agent session closes.
func (c *conversation) loseLocked() { c.loseThenLocked(nil) }

// loseThenLocked is loseLocked, running then (if not nil) once the
// conversation has caught up with the stream.
func (c *conversation) loseThenLocked(then func()) {
	if c.remote {
		return
	}
	c.remote = true
	c.closeInputsLocked(nil, errLost) // emits nothing now: the conversation is remote
	if t := c.turn; t != nil {
		t.cancel(errLost)
	}
	t := c.turn
	c.r.track(&c.r.work, func() {
		if t != nil {
			<-t.done
		}
		c.closeSession()
		// What the new owner stored while this relay still thought it
		// owned the conversation was not delivered here: read it now,
		// followed first if a client here watches it.
		c.r.refollow(c)
		c.r.catchUp(c)
		if then != nil {
			then()
		}
	})
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
	c.behind = err != nil && !errors.Is(err, history.ErrNotFound)
	c.mu.Unlock()
	if errors.Is(err, history.ErrNotFound) {
		r.goneRemote(c)
		return
	}
	if err != nil && r.ctx.Err() == nil {
		r.log.Warn("relay: could not catch up with a conversation another relay writes; its next event tries again, or a relay's death", "conversationId", c.id, "err", err)
	}
}

// lostToAnother reports whether a conversation's failed append means the
// relay lost it, not that the store failed: another writer appended
// (history.ErrConflict), or the relay was stalled past its lease, which
// may have lapsed (history.ErrLeaseLost).
func lostToAnother(err error) bool {
	return errors.Is(err, history.ErrConflict) || errors.Is(err, history.ErrLeaseLost)
}

// fencedLocked runs on the committer when an append of the conversation
// was refused because another relay appended since, or because this
// relay was stalled past its lease: it lost the conversation. Its events
// after sentSeq were never stored and never go out; the new owner's come
// from the cluster.
//
// The stream may also hold an append of this relay's own whose Write
// failed with its outcome unsure (the cluster unreachable): the store
// refuses the next append the same way, and the relay takes the stream's
// history too, never the seqs of events that may have been delivered.
// If the turn it ran is left open there and nobody else owns the
// conversation, it takes it back and closes the turn (closeLeftOpen):
// as one the store lost (its own append), or as one the previous owner
// left (another writer: the relay it took the conversation from, resumed
// after its lease lapsed, wrote before the store refused it). A relay
// whose own lease lapsed leaves that to the others (RelayGone), and to
// itself once it has announced itself again.
func (c *conversation) fencedLocked(err error) {
	c.r.log.Warn("relay: another relay took this conversation over, or an append of this relay's whose Write failed was stored after all: it takes the stream's history", "conversationId", c.id, "unsentEvents", c.lastSeq-c.sentSeq, "err", err)
	c.failure = storeFailure{gen: c.failure.gen + 1} // its records still queued are dropped (committer.dropStale); its failed tail is not stored
	c.lastSeq = c.sentSeq
	c.unsent = nil
	then := func() {}
	if !errors.Is(err, history.ErrLeaseLost) {
		own := errors.Is(err, history.ErrOwnAppendStored)
		then = func() { c.r.closeLeftOpen(c.id, own) }
	}
	if c.remote {
		// Lost already (its lease lapsed): catch up all the same.
		c.r.track(&c.r.work, func() {
			c.r.catchUp(c)
			then()
		})
		return
	}
	c.loseThenLocked(then)
}

// troubleWindow is how long after this relay found the store unreachable
// a takeover blames the store, not the previous owner: the lapse of
// every relay's lease during a quorum loss is heard once it is back.
const troubleWindow = 2 * time.Minute

// troubledRecently reports whether this relay found the history store
// unreachable within troubleWindow.
func (r *Relay) troubledRecently() bool {
	at := r.storeTrouble.Load()
	return at != 0 && time.Since(time.Unix(0, at)) < troubleWindow
}

// leaseLapsedMessage closes a turn whose relay's lease lapsed while this
// relay too could not reach the history store in time (%s: the relay).
const leaseLapsedMessage = "the turn was stopped: the history store could not be reached in time, and the lease of %s lapsed"

// storeLostMessage closes a turn this relay ran whose end could not be
// stored while the history store was unreachable.
const storeLostMessage = "the history store could not be reached: the turn was stopped"

// closeLeftOpen closes a turn or question that the stream shows open in a
// conversation this relay lost to a conflicting append: if the owner
// record still names this relay (no other relay took it over, which
// would close them itself), it takes the conversation back, and the
// takeover closes them: with storeLostMessage if the append was this
// relay's own (own: its Write failed while the store was unreachable),
// else as left by the relay it took the conversation from, which wrote
// once more after its lease lapsed.
func (r *Relay) closeLeftOpen(id string, own bool) {
	if r.isDraining() {
		return
	}
	c := r.lookupConversation(id)
	if c == nil {
		return
	}
	c.mu.Lock()
	open := c.remote && (c.sent.streaming || c.sent.pending != nil)
	c.mu.Unlock()
	if !open {
		return
	}
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	owner, previous, err := r.cluster.Claim(ctx, id)
	if err != nil {
		r.log.Warn("relay: could not take back a conversation whose turn is left open; the next command does", "conversationId", id, "err", err)
		return
	}
	if owner != r.cluster.ID() {
		return // another relay runs it, and closed what was left open
	}
	message := storeLostMessage
	if !own {
		message = ""
		c.mu.Lock()
		previous = cmp.Or(previous, c.takenFrom)
		c.mu.Unlock()
	}
	if err := r.takeOverAs(ctx, id, previous, message); err != nil {
		r.log.Warn("relay: could not take back a conversation whose turn is left open; the next command does", "conversationId", id, "err", err)
	}
	r.refollow(c)
}

// owned reports whether this relay owns the conversation.
func (c *conversation) owned() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.remote
}

// routeCommand finds who runs a command on conversation id: "" when this
// relay does (it owned it, or has just claimed it and taken it over), else
// the owner's id.
func (r *Relay) routeCommand(ctx context.Context, id string) (string, error) {
	if c := r.lookupConversation(id); c != nil {
		if c.owned() {
			return "", nil
		}
		c.mu.Lock()
		err := c.visibleLocked()
		c.mu.Unlock()
		if err != nil {
			// Its folder is not here: this relay runs it only if it
			// already does, and never takes it over (workspace.go).
			owner, live, oerr := r.cluster.Owner(ctx, id)
			if oerr != nil {
				return "", oerr
			}
			if live && owner != "" && owner != r.cluster.ID() {
				return owner, nil
			}
			return "", err
		}
	}
	owner, previous, err := r.cluster.Claim(ctx, id)
	if err != nil {
		return "", err
	}
	if owner != r.cluster.ID() {
		return owner, nil
	}
	err = r.takeOver(ctx, id, previous)
	if c := r.lookupConversation(id); c != nil {
		r.refollow(c) // its own now: its events are written here
	}
	return "", err
}

// takeOver makes a conversation this relay has just claimed its own: it
// catches up with what is stored, then closes what the previous owner left
// open, as a restart does.
func (r *Relay) takeOver(ctx context.Context, id, previous string) error {
	return r.takeOverAs(ctx, id, previous, "")
}

// takeOverAs is takeOver closing an open turn with message ("": the
// previous owner was lost).
func (r *Relay) takeOverAs(ctx context.Context, id, previous, message string) error {
	// Records this relay queued for the conversation before it lost it
	// (its lease lapsed) are written, or refused, before the store's next
	// append expects what is stored now: none of them may land after it.
	if !r.commit.sync(ctx) {
		return fmt.Errorf("the relay is stopping, or its history store is stuck: %w", cmp.Or(ctx.Err(), errShutdown))
	}
	state, err := r.cluster.Latest(ctx, id)
	found := err == nil
	if err != nil && !errors.Is(err, history.ErrNotFound) {
		return err
	}
	var conv *conversation
	if err := r.withConversation(ctx, id, func(c *conversation) { conv = c }); err != nil {
		return err
	}
	conv.liveMu.Lock()
	defer conv.liveMu.Unlock()
	if found {
		if err := r.applyStoredLocked(ctx, conv, nil, state); err != nil {
			return err
		}
	}
	conv.mu.Lock()
	defer conv.mu.Unlock()
	if !conv.remote {
		return nil // taken over meanwhile, by another command
	}
	if found && conv.sentSeq != state.LastSeq {
		return fmt.Errorf("caught up to seq %d of %d", conv.sentSeq, state.LastSeq)
	}
	conv.remote = false
	conv.takenFrom = previous
	conv.lastSeq = conv.sentSeq
	conv.unsent = nil
	conv.fromStore = found // the agent session resumes
	conv.streaming = false
	if !found {
		return nil
	}
	if previous == "" {
		previous = "the previous owner"
	} else {
		previous = "relay " + previous
	}
	if state.Streaming || len(state.PendingInput) > 0 {
		// It changes now; a takeover that closes nothing leaves the
		// conversation as old as it is (--history-max-age prunes it).
		conv.updatedAt = time.Now()
	}
	if len(state.PendingInput) > 0 {
		var pending struct {
			RequestID string `json:"requestId"`
		}
		_ = json.Unmarshal(state.PendingInput, &pending) // an unreadable one is still closed
		d := protocol.UserInputClosed{RequestID: pending.RequestID, Reason: protocol.ClosedAborted}
		conv.emitLocked(protocol.TypeUserInputClosed, &d.Header, &d)
	}
	if state.Streaming {
		switch {
		case message != "":
		case r.troubledRecently():
			// This relay could not reach the store in time either (its
			// own lease lapsed, or a write failed): the previous owner's
			// lease most likely lapsed with everyone's, in a quorum loss,
			// and it was not lost.
			message = fmt.Sprintf(leaseLapsedMessage, previous)
		default:
			message = fmt.Sprintf("relay lost: %s stopped while the turn ran", previous)
		}
		d := protocol.Idle{Status: protocol.StatusError, Message: message}
		conv.emitLocked(protocol.TypeIdle, &d.Header, &d)
	}
	if state.Streaming || len(state.PendingInput) > 0 {
		r.log.Info("relay: took a conversation over", "conversationId", id, "from", previous, "closedTurn", state.Streaming, "closedQuestion", len(state.PendingInput) > 0)
	} else {
		r.log.Debug("relay: runs a conversation from now on", "conversationId", id, "from", previous)
	}
	return nil
}

// applyStored brings a remote conversation up to state: the events after
// the last one its subscribers got (events, or read from the store when
// events do not follow on from it), then the state.
func (r *Relay) applyStored(ctx context.Context, conv *conversation, events []history.Event, state history.Conversation) error {
	conv.liveMu.Lock()
	defer conv.liveMu.Unlock()
	return r.applyStoredLocked(ctx, conv, events, state)
}

// applyStoredLocked is applyStored with conv.liveMu held.
func (r *Relay) applyStoredLocked(ctx context.Context, conv *conversation, events []history.Event, state history.Conversation) error {
	conv.mu.Lock()
	if !conv.remote || conv.deleted.Load() {
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
	if !conv.remote || conv.deleted.Load() {
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
		done := c.remote || c.sentSeq >= c.lastSeq || c.failure.failed
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
	gone := c.remote && c.sentSeq > 0 && !c.deleted.Load()
	c.mu.Unlock()
	if gone {
		c.finishDelete()
		r.refollow(c)
	}
}

// storeUnreachable is the error a command that changes a conversation
// gets at once while the history store cannot be reached (a quorum loss,
// the relay cut off from NATS: Cluster.Health), instead of waiting for
// requests to time out; nil when it can be, and for copilot:abort and
// copilot:close, which stop an agent that runs here whatever the store.
func (r *Relay) storeUnreachable(msgType, id string) *protocol.Error {
	if msgType == protocol.TypeAbort || msgType == protocol.TypeClose {
		return nil
	}
	reason := r.cluster.Health()
	if reason == "" {
		return nil
	}
	return &protocol.Error{Code: protocol.CodeLimit, Type: msgType, ConversationID: id,
		Message: "the history store cannot be reached, so nothing can be saved and the relay changes no conversation (" + reason + "): send again once it is back"}
}

// clusterUnreachable is the error a command gets when its owner cannot be
// found or reached.
func clusterUnreachable(msgType, id string, err error) *protocol.Error {
	return &protocol.Error{Code: protocol.CodeLimit, Type: msgType, ConversationID: id,
		Message: fmt.Sprintf("the relay could not reach the relay that runs this conversation (%v): send again in a moment", err)}
}

// unreachableWait bounds how long a command waits for a relay that does
// not answer (dead, or reconnecting) to answer again or be taken over: it
// is taken over once its lease lapses (15 s by default).
const unreachableWait = 30 * time.Second

// forward runs a command on conversation id wherever it is owned: here,
// when this relay owns it or has just taken it (it reports false: run it),
// or on the owner, whose error reply goes to c. before, if not nil, runs
// once before the command first leaves. A relay that does not answer is
// asked again until it answers or its lease lapses and this relay takes
// the conversation over, for up to unreachableWait.
func (r *Relay) forward(c *conn, msgType, id string, data any, before func()) (handled bool) {
	if e := r.storeUnreachable(msgType, id); e != nil {
		c.sendError(e)
		return true
	}
	deadline := time.Now().Add(unreachableWait)
	moved := 0
	for {
		owner, err := r.routeCommand(c.ctx, id)
		if isNotVisible(err) {
			c.sendError(notVisible(msgType, id, err))
			return true
		}
		if err != nil {
			c.sendError(clusterUnreachable(msgType, id, err))
			return true
		}
		if owner == "" {
			return false
		}
		frame, err := protocol.Encode(msgType, data)
		if err != nil {
			r.log.Error("relay: encode a forwarded command", "type", msgType, "err", err)
			return true
		}
		if before != nil {
			before()
			before = nil
		}
		body, _ := json.Marshal(forwarded{Frame: frame, By: c.id.by()})
		answer, err := r.cluster.Forward(c.ctx, owner, body)
		if errors.Is(err, history.ErrUnreachable) && time.Now().Before(deadline) {
			select {
			case <-c.ctx.Done():
				return true
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			c.sendError(clusterUnreachable(msgType, id, err))
			return true
		}
		var rep forwardReply
		if err := json.Unmarshal(answer, &rep); err != nil {
			c.sendError(clusterUnreachable(msgType, id, fmt.Errorf("a bad answer from relay %s: %w", owner, err)))
			return true
		}
		if rep.NotOwner {
			if moved++; moved < 3 {
				continue // it lost the conversation meanwhile: ask again
			}
			c.sendError(clusterUnreachable(msgType, id, errors.New("its owner keeps changing")))
			return true
		}
		if rep.Error != nil {
			c.sendError(rep.Error)
		}
		return true
	}
}

// runForwarded runs a command another relay forwarded, as the owner.
func (r *Relay) runForwarded(ctx context.Context, body []byte) []byte {
	reply := func(rep forwardReply) []byte {
		b, _ := json.Marshal(rep)
		return b
	}
	var f forwarded
	if err := json.Unmarshal(body, &f); err != nil {
		return reply(forwardReply{Error: &protocol.Error{Code: protocol.CodeInvalidJSON, Message: "a bad forwarded command: " + err.Error()}})
	}
	req, perr := protocol.DecodeRequest(f.Frame)
	if perr != nil {
		return reply(forwardReply{Error: perr})
	}
	id := req.ConversationID()
	if id == "" {
		return reply(forwardReply{Error: &protocol.Error{Code: protocol.CodeMissingField, Type: req.Type, Message: "a forwarded command names no conversation"}})
	}
	if r.ctx.Err() != nil {
		// Shutting down, its cluster not stopped yet: a send would start
		// no turn (track refuses it) and vanish. Once this relay has
		// given its conversations up, the command goes to another.
		return reply(forwardReply{Error: &protocol.Error{Code: protocol.CodeLimit, Type: req.Type, ConversationID: id,
			Message: "the relay that runs this conversation is shutting down: send again in a moment, another relay takes it over"}})
	}
	if r.isDraining() {
		// Draining: a command runs here only on a conversation whose
		// turn still runs here; any other is handed over (or was), and
		// the sender claims it.
		if c := r.lookupConversation(id); c == nil || r.handOff(ctx, c) {
			return reply(forwardReply{NotOwner: true})
		}
	}
	owner, err := r.routeCommand(ctx, id)
	switch {
	case err != nil:
		return reply(forwardReply{Error: clusterUnreachable(req.Type, id, err)})
	case owner != "":
		return reply(forwardReply{NotOwner: true})
	}
	var e *protocol.Error
	switch d := req.Data.(type) {
	case *protocol.Send:
		e = r.startSend(ctx, d, f.By, nil)
	case *protocol.Abort:
		e = r.abortConversation(d)
	case *protocol.SetMode:
		// The device that switched, on the relay it is connected to,
		// as copilot:mode_changed names it there.
		e = r.setModeBy(ctx, d, f.By)
	case *protocol.UserInputResponse:
		e = r.answer(d, f.By)
	case *protocol.Restore:
		e = r.restoreConversation(ctx, d)
	case *protocol.ConversationRef:
		switch req.Type {
		case protocol.TypeClose:
			_ = r.withConversation(ctx, d.ConversationID, (*conversation).startCloseLocked)
		case protocol.TypeDelete:
			r.deleteConversation(ctx, d.ConversationID, nil, nil)
		}
	default:
		e = &protocol.Error{Code: protocol.CodeInvalidMessage, Type: req.Type, ConversationID: id, Message: "this command is not forwarded"}
	}
	return reply(forwardReply{Error: e})
}
