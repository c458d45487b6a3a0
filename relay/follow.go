package relay

import (
	"context"
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

// refollow makes the relay follow conversation c exactly while another
// relay owns it and a client of this relay watches it (a subscriber, or
// one on its way), and for the linger after that. It reports whether it
// began following just now: what was stored before is to be caught up.
func (r *Relay) refollow(c *conversation) (began bool) {
	if r.cluster == nil {
		return false
	}
	c.own.mu.Lock()
	defer c.own.mu.Unlock()
	return r.refollowOwnLocked(c, false)
}

// refollowOwnLocked is refollow with c.own.mu held; expired says the
// linger is over.
func (r *Relay) refollowOwnLocked(c *conversation, expired bool) (began bool) {
	o := &c.own
	c.mu.Lock()
	keep := !o.here && !c.deleted.Load() && r.ctx.Err() == nil
	watched := len(c.subs) > 0 || o.joining > 0
	c.mu.Unlock()
	switch {
	case keep && watched:
		o.stopLinger()
		if o.unfollow != nil {
			return false
		}
		// Under the ownership lock, for up to followLimit: a join's
		// caller reads what is stored only once the follow is in place,
		// or it could miss what is stored in between.
		ctx, cancel := context.WithTimeout(r.ctx, followLimit)
		defer cancel()
		unfollow, err := r.cluster.Follow(ctx, c.id)
		if err != nil {
			r.log.Warn("relay: could not follow a conversation another relay runs; its subscribers catch up when it is read again", "conversationId", c.id, "err", err)
			return false
		}
		o.unfollow = unfollow
		return true
	case keep && !expired && o.unfollow != nil:
		if o.linger == nil {
			o.gen++
			gen := o.gen
			o.linger = time.AfterFunc(r.follow.linger, func() { r.lingerOver(c, gen) })
		}
	default:
		o.endFollowing()
	}
	return false
}

func (o *ownership) stopLinger() {
	if o.linger != nil {
		o.linger.Stop()
		o.linger = nil
	}
}

// endFollowing ends the following and its linger; called with mu held.
func (o *ownership) endFollowing() {
	o.stopLinger()
	if o.unfollow != nil {
		o.unfollow()
		o.unfollow = nil
	}
}

// lingerOver ends the linger gen, unless a subscriber came meanwhile.
func (r *Relay) lingerOver(c *conversation, gen int) {
	c.own.mu.Lock()
	defer c.own.mu.Unlock()
	if c.own.gen != gen || c.own.linger == nil {
		return // stopped, or another started since
	}
	c.own.linger = nil
	r.refollowOwnLocked(c, true)
}

// join marks a subscriber on its way to conversation id (a subscribe, a
// send's implicit subscription) and follows the conversation if another
// relay owns it, before the caller reads what is stored for it. The
// returned function ends the join, once it is a subscriber or failed.
func (r *Relay) join(ctx context.Context, id string) (leave func()) {
	var conv *conversation
	if err := r.withConversation(ctx, id, func(c *conversation) { conv = c }); err != nil {
		return func() {}
	}
	conv.own.mu.Lock()
	conv.own.joining++
	r.refollowOwnLocked(conv, false)
	conv.own.mu.Unlock()
	return func() {
		conv.own.mu.Lock()
		defer conv.own.mu.Unlock()
		conv.own.joining--
		r.refollowOwnLocked(conv, false)
	}
}

// joinRemote readies conversation id, in a cluster, for a subscriber on
// its way: it joins (followed first, so that nothing stored after the read
// is missed), then brings the conversation up to what is stored and takes
// it over if its relay is gone with a turn open (syncRemote). The
// returned function ends the join. Without a cluster it does nothing.
func (r *Relay) joinRemote(ctx context.Context, id string) (leave func()) {
	if r.cluster == nil {
		return func() {}
	}
	leave = r.join(ctx, id)
	r.syncRemote(ctx, id)
	return leave
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
		c.own.mu.Lock()
		c.own.endFollowing()
		c.own.mu.Unlock()
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
		own := conv.own.here || len(conv.subs) > 0
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
		check := !c.own.here && c.sentSeq > 0 && !c.deleted.Load()
		c.mu.Unlock()
		if check {
			// Not listed: deleted, or its record not indexed yet; the
			// stream says which (catchUp forgets it if it is gone).
			r.catchUp(c)
		}
	}
}
