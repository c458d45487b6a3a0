package relay

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// Who runs a conversation, and the changes of it (docs/scale-out.md).
// Without a cluster this relay runs every conversation, for good. With one
// (Config.Cluster, cluster.go) a conversation is this relay's from the
// takeover that follows its claim (routeCommand) until it loses it: an
// append refused because another relay appended first (the fence), or its
// own lease lapsing, or a drain handing it off. The rest of the time it is
// remote: another relay's, or nobody's until a relay claims it. The relay
// does not tell those two apart: it asks the cluster (Claim, Owner) when
// it matters. A remote conversation is caught up from what its owner
// stores (cluster.go) and followed while a client here watches it
// (follow.go).

// ownership is who runs a conversation, as this relay knows it, and the
// state of what follows from that: the losses, the catch-ups of a remote
// conversation, its following.
//
// Its lock, mu (the ownership lock), is held through every sequence that
// depends on the owner, so that they come one at a time and in order: a
// catch-up with what the owner stored (applyStored), a takeover
// (takeOverAs), a change of following (refollow). It is taken before the
// conversation's mu, never under it, and never under Relay.mu; a function
// called with it held ends in OwnLocked. The owner itself changes with the
// conversation's mu held: a takeover holds both locks, but a loss may come
// at any moment (on the committer, from the cluster's lease) and takes
// only the conversation's mu, so a sequence under the ownership lock
// checks the owner again under mu before it acts.
type ownership struct {
	mu sync.Mutex // the ownership lock: guards unfollow, linger, gen, joining

	// Guarded by the conversation's mu.
	//
	// here: this relay runs the conversation: it emits its events, runs
	// its turns and its agent session. Always true without a cluster.
	here bool
	// takenFrom is the relay this one last took the conversation over
	// from ("": none, or unknown), named if that relay's late append
	// makes this one close the turn again (closeLeftOpen).
	takenFrom string
	// reconnectCatchUp: a catch-up that Reconnected started runs; the
	// next Reconnected (one a second while messages are dropped) skips
	// the conversation instead of piling another on (cluster.go).
	reconnectCatchUp bool
	// behind: the last catch-up of this remote conversation failed (the
	// store did not answer), so what it shows, a turn running included,
	// may be stale until the next event; a relay's death catches it up
	// first (RelayGone).
	behind bool

	// stopped is closed once what the relay ran before it last lost the
	// conversation has stopped: the turn it cancelled ended, the agent
	// session closed (loseThenLocked). A takeover waits for it: a turn
	// still ending would emit its idle into the conversation owned again,
	// after the takeover closed it, and the new turn would share the
	// session about to close. nil before any loss.
	stopped chan struct{}

	// losses counts the times this relay stopped owning it because it was
	// stalled past its lease (cluster.go, LeaseLost): the events it had
	// queued for the store before are never written (committer.dropStale).
	// Written under the conversation's mu; atomic because the committer
	// reads it without.
	losses atomic.Uint64

	// The following (follow.go), guarded by mu.
	unfollow func()      // not nil while the relay follows the conversation
	linger   *time.Timer // the end of the linger, while it runs
	gen      int         // tells a linger that fires from one stopped since
	// joining counts the subscribers on their way (join): followed before
	// they are subscribers, so that what is read for them misses nothing.
	joining int
}

// lostCommand is the answer to a command that reaches a conversation after
// it was lost to another relay (a fenced append, a lapsed lease) between
// its routing and its run: error limit, send it again, which routes it to
// the new owner. A send that ran would run the agent for nobody, its
// events dropped.
func lostCommand(typ, id string) *protocol.Error {
	msg := "another relay took this conversation over as the command arrived: send it again in a moment"
	if typ == protocol.TypeSend {
		msg = "another relay took this conversation over as the send arrived: send again in a moment"
	}
	return &protocol.Error{Code: protocol.CodeLimit, Type: typ, ConversationID: id, Message: msg}
}

// watchedRemoteLocked reports whether another relay runs the conversation
// (or nobody does) and a client here watches it: what this relay must
// catch up, follow, and take over if its owner is gone.
func (c *conversation) watchedRemoteLocked() bool {
	return !c.own.here && len(c.subs) > 0
}

// lostLocked is the answer to a command that reaches a conversation this
// relay no longer runs, nil when it runs it: lost to another relay (a
// fenced append, a lapsed lease) between the command's routing and its
// run. Without a cluster it is always nil.
func (c *conversation) lostLocked(typ string) *protocol.Error {
	if c.own.here {
		return nil
	}
	return lostCommand(typ, c.id)
}

// errLost cancels the turns of a conversation the relay no longer owns.
var errLost = errors.New("another relay took the conversation over")

// loseLocked makes an owned conversation remote: its turn stops without a
// word (its events would be refused: another relay may own it now), its
// questions are withdrawn, its agent session closes.
func (c *conversation) loseLocked() { c.loseThenLocked(nil) }

// loseThenLocked is loseLocked, running then (if not nil) once the
// conversation has caught up with the stream.
func (c *conversation) loseThenLocked(then func()) {
	if !c.own.here {
		return
	}
	c.own.here = false
	c.closeInputsLocked(nil, errLost) // emits nothing now: the conversation is remote
	if t := c.turn; t != nil {
		t.cancel(errLost)
	}
	t := c.turn
	stopped := make(chan struct{})
	c.own.stopped = stopped
	started := c.r.track(&c.r.work, func() {
		if t != nil {
			<-t.done
		}
		c.closeSession()
		close(stopped)
		// What the new owner stored while this relay still thought it
		// owned the conversation was not delivered here: read it now,
		// followed first if a client here watches it.
		c.r.refollow(c)
		c.r.catchUp(c)
		if then != nil {
			then()
		}
	})
	if !started {
		close(stopped) // the relay is stopping: nothing takes it back
	}
}

// waitStopped waits until what the relay ran before it last lost the
// conversation has stopped (ownership.stopped), or ctx ends.
func (c *conversation) waitStopped(ctx context.Context) error {
	c.mu.Lock()
	stopped := c.own.stopped
	c.mu.Unlock()
	if stopped == nil {
		return nil
	}
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the turn this relay ran before it lost the conversation has not stopped yet: %w", context.Cause(ctx))
	}
}

// lostToAnother reports whether a conversation's failed append means the
// relay lost it, not that the store failed: another writer appended
// (history.ErrConflict), or the relay was stalled past its lease, which
// may have lapsed (history.ErrLeaseLost). A relay alone loses nothing.
func (r *Relay) lostToAnother(err error) bool {
	return r.cluster != nil && (errors.Is(err, history.ErrConflict) || errors.Is(err, history.ErrLeaseLost))
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
	if c.startUnsentLocked() {
		c.turn.settleStartLocked(c, true) // its start is among what is dropped
	}
	c.failure = storeFailure{gen: c.failure.gen + 1} // its records still queued are dropped (committer.dropStale); its failed tail is not stored
	c.lastSeq = c.sentSeq
	c.unsent = nil
	then := func() {}
	if !errors.Is(err, history.ErrLeaseLost) {
		own := errors.Is(err, history.ErrOwnAppendStored)
		then = func() { c.r.closeLeftOpen(c.id, own) }
	}
	if !c.own.here {
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
//
// A try that fails (the store or the owners' bucket not answering yet, as
// while a cluster heals) is made again, a second later and then twice as
// long, up to 8 s, while the turn or question is still open here, for up
// to takeOverWait. Given up at the first failure, the turn stayed open for
// good: the owner record names this relay, alive, so no other relay takes
// it over, and its sender waits for its end without sending anything
// (TestClusterTakeBackEndsTurnOnce).
func (r *Relay) closeLeftOpen(id string, own bool) {
	c := r.lookupConversation(id)
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(r.ctx, takeOverWait)
	defer cancel()
	tried := false
	defer func() {
		if tried {
			r.refollow(c) // its own again: its events are written here
		}
	}()
	for wait := time.Second; ; wait = min(2*wait, 8*time.Second) {
		if r.isDraining() || !c.openRemote() {
			return // another relay takes it, or it is closed or taken back
		}
		tried = true
		err := r.takeBack(ctx, c, own)
		if err == nil {
			return
		}
		if ctx.Err() == nil && c.openRemote() {
			r.log.Info("relay: taking back a conversation whose turn is left open failed; trying again", "conversationId", id, "err", err, "in", wait)
			select {
			case <-ctx.Done():
			case <-time.After(wait):
				continue
			}
		}
		r.log.Warn("relay: could not take back a conversation whose turn is left open; the next command does", "conversationId", id, "err", err)
		return
	}
}

// openRemote reports whether this relay does not run the conversation
// and, as it last knew it, a turn or a question is open in it.
func (c *conversation) openRemote() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.own.here && (c.sent.streaming || c.sent.pending != nil)
}

// takeBack is one try of closeLeftOpen: it claims the conversation and,
// if the owner record still names this relay, takes it over.
func (r *Relay) takeBack(ctx context.Context, c *conversation, own bool) error {
	owner, previous, err := r.cluster.Claim(ctx, c.id)
	if err != nil {
		return err
	}
	if owner != r.cluster.ID() {
		return nil // another relay runs it, and closed what was left open
	}
	message := storeLostMessage
	if !own {
		message = ""
		c.mu.Lock()
		previous = cmp.Or(previous, c.own.takenFrom)
		c.mu.Unlock()
	}
	return r.takeOverAs(ctx, c.id, previous, message)
}

// owned reports whether this relay owns the conversation.
func (c *conversation) owned() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.own.here
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

// claimToPrune reports whether this relay owns conv, a conversation
// PruneIdle may delete: it owned it already, or conv is idle since
// before cutoff and its owner is gone, and this relay has claimed it.
func (r *Relay) claimToPrune(ctx context.Context, conv *conversation, cutoff time.Time) bool {
	conv.mu.Lock()
	remote := !conv.own.here
	idle := !conv.streaming && conv.sent.pending == nil && conv.updatedAt.Before(cutoff)
	conv.mu.Unlock()
	if !remote {
		return true
	}
	if !idle {
		return false
	}
	owner, live, err := r.cluster.Owner(ctx, conv.id)
	if err != nil {
		r.log.Warn("relay: history retention: could not find who owns a conversation; it is left for now", "conversationId", conv.id, "err", err)
		return false
	}
	if live {
		return false // its owner prunes it
	}
	// A claim is a compare-and-set: of the relays that prune at once,
	// one wins; the others find it the owner.
	runner, err := r.routeCommand(ctx, conv.id)
	if err != nil {
		r.log.Warn("relay: history retention: could not claim a conversation whose relay is gone; it is left for now", "conversationId", conv.id, "relay", owner, "err", err)
		return false
	}
	return runner == ""
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
	// A conversation this relay lost (its lease lapsed) and takes back:
	// the turn it cancelled then ends first, its events dropped as a
	// remote conversation's, not emitted after this takeover closed it
	// (make test's TestChaos/relay-stop, at a load average of 20: a turn
	// closed "relay lost", then "aborted" once the next had started).
	if c := r.lookupConversation(id); c != nil {
		if err := c.waitStopped(ctx); err != nil {
			return err
		}
	}
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
	conv.own.mu.Lock()
	defer conv.own.mu.Unlock()
	if found {
		if err := r.applyStoredOwnLocked(ctx, conv, nil, state); err != nil {
			return err
		}
	}
	conv.mu.Lock()
	defer conv.mu.Unlock()
	if conv.own.here {
		return nil // taken over meanwhile, by another command
	}
	if found && conv.sentSeq != state.LastSeq {
		return fmt.Errorf("caught up to seq %d of %d", conv.sentSeq, state.LastSeq)
	}
	conv.own.here = true
	conv.own.takenFrom = previous
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
