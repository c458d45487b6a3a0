package relay

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Following only what is watched (docs/scale-out.md): in a cluster the
// relay gets the events of a conversation another relay owns only while a
// client of its own watches it (history.Cluster.Follow), and a linger
// after the last one leaves, so that a client that reconnects and
// subscribes again costs nothing more. The lists hear of every other
// conversation from the record changes its owner publishes (the cluster's
// Stored, with no events); a relay that may have missed some (a
// reconnect, messages dropped) lists the stored conversations again
// (repairList).

// DefaultFollowLinger is how long a relay goes on following a
// conversation another relay owns after its last local subscriber left.
const DefaultFollowLinger = 30 * time.Second

// followLimit bounds the round trip of a Follow.
const followLimit = 10 * time.Second

// relayFollow is the relay's side of following.
type relayFollow struct {
	linger    time.Duration // Config.FollowLinger
	repairing atomic.Bool   // a repairList runs: one at a time
}

// convFollow is a conversation's following. mu serialises the changes of
// it (taken before the conversation's liveMu and mu, never under them) and
// guards the fields but joining, which the conversation's mu guards.
type convFollow struct {
	mu       sync.Mutex
	unfollow func()      // not nil while the relay follows the conversation
	linger   *time.Timer // the end of the linger, while it runs
	gen      int         // tells a linger that fires from one stopped since
	// joining counts the subscribers on their way (join): followed before
	// they are subscribers, so that what is read for them misses nothing.
	joining int
}

// refollow makes the relay follow conversation c exactly while another
// relay owns it and a client of this relay watches it (a subscriber, or
// one on its way), and for the linger after that. It reports whether it
// began following just now: what was stored before is to be caught up.
func (r *Relay) refollow(c *conversation) (began bool) {
	if r.cluster == nil {
		return false
	}
	c.follow.mu.Lock()
	defer c.follow.mu.Unlock()
	return r.refollowLocked(c, false)
}

// refollowLocked is refollow with c.follow.mu held; expired says the
// linger is over.
func (r *Relay) refollowLocked(c *conversation, expired bool) (began bool) {
	f := &c.follow
	c.mu.Lock()
	keep := c.remote && !c.deleted.Load() && r.ctx.Err() == nil
	watched := len(c.subs) > 0 || f.joining > 0
	c.mu.Unlock()
	switch {
	case keep && watched:
		f.stopLinger()
		if f.unfollow != nil {
			return false
		}
		ctx, cancel := context.WithTimeout(r.ctx, followLimit)
		defer cancel()
		unfollow, err := r.cluster.Follow(ctx, c.id)
		if err != nil {
			r.log.Warn("relay: could not follow a conversation another relay runs; its subscribers catch up when it is read again", "conversationId", c.id, "err", err)
			return false
		}
		f.unfollow = unfollow
		return true
	case keep && !expired && f.unfollow != nil:
		if f.linger == nil {
			f.gen++
			gen := f.gen
			f.linger = time.AfterFunc(r.follow.linger, func() { r.lingerOver(c, gen) })
		}
	default:
		f.stopLinger()
		if f.unfollow != nil {
			f.unfollow()
			f.unfollow = nil
		}
	}
	return false
}

func (f *convFollow) stopLinger() {
	if f.linger != nil {
		f.linger.Stop()
		f.linger = nil
	}
}

// lingerOver ends the linger gen, unless a subscriber came meanwhile.
func (r *Relay) lingerOver(c *conversation, gen int) {
	c.follow.mu.Lock()
	defer c.follow.mu.Unlock()
	if c.follow.gen != gen || c.follow.linger == nil {
		return // stopped, or another started since
	}
	c.follow.linger = nil
	r.refollowLocked(c, true)
}

// join marks a subscriber on its way to conversation id (a subscribe, a
// send's implicit subscription) and follows the conversation if another
// relay owns it, before the caller reads what is stored for it. The
// returned function ends the join, once it is a subscriber or failed.
func (r *Relay) join(ctx context.Context, id string) (leave func()) {
	var conv *conversation
	if err := r.withConversation(ctx, id, func(c *conversation) {
		c.follow.joining++
		conv = c
	}); err != nil {
		return func() {}
	}
	r.refollow(conv)
	return func() {
		conv.mu.Lock()
		conv.follow.joining--
		conv.mu.Unlock()
		r.refollow(conv)
	}
}

// followWatched follows conversation c, which has just got a subscriber,
// if it is not followed yet (the conversation join followed was deleted
// and made anew meanwhile), and then catches it up.
func (r *Relay) followWatched(c *conversation) {
	if r.refollow(c) {
		r.catchUp(c)
	}
}

// stopFollowing ends every following: the relay shuts down.
func (r *Relay) stopFollowing() {
	convs := r.allConversations()
	for _, c := range convs {
		c.follow.mu.Lock()
		c.follow.stopLinger()
		if c.follow.unfollow != nil {
			c.follow.unfollow()
			c.follow.unfollow = nil
		}
		c.follow.mu.Unlock()
	}
}

// repairList brings the list up to what is stored, when record changes
// may have been missed (a reconnect, messages dropped): every stored
// conversation is listed with its stored state, and a remote one that is
// no longer stored is forgotten, its subscribers told (goneRemote). The
// followed ones catch up from their own events (Reconnected).
func (r *Relay) repairList() {
	if !r.follow.repairing.CompareAndSwap(false, true) {
		return
	}
	defer r.follow.repairing.Store(false)
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	// What was known before the listing: one made since may not be in it.
	r.mu.Lock()
	before := make(map[string]*conversation, len(r.convs))
	for id, c := range r.convs {
		before[id] = c
	}
	r.mu.Unlock()
	stored, err := r.store.Conversations(ctx)
	if err != nil {
		if r.ctx.Err() == nil {
			r.log.Warn("relay: could not list the stored conversations to repair the list; the next reconnect tries again", "err", err)
		}
		return
	}
	r.log.Debug("relay: repair the list of conversations", "stored", len(stored))
	for _, m := range stored {
		delete(before, m.ID)
		var conv *conversation
		if err := r.withConversation(ctx, m.ID, func(c *conversation) { conv = c }); err != nil {
			return
		}
		conv.mu.Lock()
		own := !conv.remote || len(conv.subs) > 0
		conv.mu.Unlock()
		if own {
			continue // run here, or caught up from its own events
		}
		if err := r.applyStored(ctx, conv, nil, m); err != nil {
			r.log.Debug("relay: repair a listed conversation", "conversationId", m.ID, "err", err)
		}

	}
	for _, c := range before {
		c.mu.Lock()
		check := c.remote && c.sentSeq > 0 && !c.deleted.Load()
		c.mu.Unlock()
		if check {
			// Not listed: deleted, or its record not indexed yet; the
			// stream says which (catchUp forgets it if it is gone).
			r.catchUp(c)
		}
	}
}
