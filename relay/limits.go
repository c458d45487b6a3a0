package relay

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// Every resource a client can make the relay hold has a limit, answered
// with `error` code limit (docs/protocol.md, Limits and flow control):
// connections (serveWS, admitLocked: in all, per device token, and a
// reserve for the owner), subscriptions per connection (canSubscribe), new
// conversations per token per minute (here), frames being received
// (conn.readFrame, reserveFrameBytes: in all, per device token, and a
// reserve for the owner) and, for what a connection is sent, its send
// queue and a replay's window (conn.go). Before a token is checked, the
// HTTP connections of one address and its wrong tokens are bounded too
// (auth.go). The limits' values are relay.Config's, with their defaults
// in relay.go; docs/protocol.md lists them.

// tokenBucket allows a burst of size tokens, refilled at size per minute.
// Its owner guards it (usage.mu).
type tokenBucket struct {
	tokens float64
	at     time.Time
}

// take takes a token if there is one, after refilling for the time since
// the last take.
func (b *tokenBucket) take(size int, now time.Time) bool {
	b.tokens = min(float64(size), b.tokens+now.Sub(b.at).Minutes()*float64(size))
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// full reports whether the bucket would be whole again at now.
func (b *tokenBucket) full(size int, now time.Time) bool {
	return b.tokens+now.Sub(b.at).Minutes()*float64(size) >= float64(size)
}

// createsConversation reports whether a request naming id would make a
// conversation the relay does not have yet: one with no event, which the
// request would give its first.
func (r *Relay) createsConversation(id string) bool {
	c := r.lookupConversation(id)
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deleted.Load() || (c.lastSeq == 0 && !c.fromStore)
}

// mayCreate reports whether the connection may make the request msgType
// about conversation id, and sends error limit if not: each token (all its
// connections together) creates at most maxNewConvs conversations a
// minute, so that one client cannot fill the relay's list and store with
// thousands in a second, however many connections it opens.
func (c *conn) mayCreate(msgType, id string) bool {
	if !c.r.createsConversation(id) || c.r.takeNewConv(c.id) {
		return true
	}
	c.sendError(&protocol.Error{Code: protocol.CodeLimit, Type: msgType, ConversationID: id,
		Message: fmt.Sprintf("this token has created %d conversations in the last minute, the most the relay allows: wait a little, or go on with one that exists", c.r.maxNewConvs)})
	return false
}

// tokenLimits are the limits each device token has of its own, and what
// of the relay's limits only an owner may use: one token (a viewer's,
// say) cannot take all the connections or all the budget of frames being
// received and so lock the owner out. The relay's own token has no limit
// of its own: it is the owner's, and bounded by the relay's limits alone.
type tokenLimits struct {
	connsPerToken   int   // connections one device token may hold
	pendingPerToken int64 // bytes of frames being received one device token may hold
	ownerConns      int   // of maxConns, kept for owners
	ownerPending    int64 // of maxPendingFrames, kept for owners
}

// usage is what each token holds now: its connections, its frames being
// received, and its allowance of new conversations. One lock, a leaf
// (taken under Relay.mu by admit).
type usage struct {
	mu      sync.Mutex // guards byToken, pending
	byToken map[[sha256.Size]byte]*tokenUse
	pending int64 // all frames being received, beyond each one's first frameBase
}

// tokenUse is one token's share, keyed by the SHA-256 of a device token or
// the zero key for the relay's own token (identity.hash).
type tokenUse struct {
	conns    int
	pending  int64
	newConvs tokenBucket
	started  bool // newConvs holds a time
}

// useLocked returns the token's entry, made if it has none.
func (u *usage) useLocked(key [sha256.Size]byte) *tokenUse {
	if u.byToken == nil {
		u.byToken = map[[sha256.Size]byte]*tokenUse{}
	}
	tu := u.byToken[key]
	if tu == nil {
		tu = &tokenUse{}
		u.byToken[key] = tu
	}
	return tu
}

// forgetLocked drops a token's entry once it holds nothing and its
// allowance of new conversations is whole again, so that the map holds
// only the tokens in use.
func (u *usage) forgetLocked(key [sha256.Size]byte, tu *tokenUse, size int, now time.Time) {
	if tu.conns == 0 && tu.pending == 0 && (!tu.started || tu.newConvs.full(size, now)) {
		delete(u.byToken, key)
	}
}

func (id identity) isOwner() bool { return id.role == protocol.RoleOwner }

// admitLocked decides whether a connection of id may open, with the
// relay's connections at total, and counts it if so; otherwise it returns
// the sentence the refusal says. Called with Relay.mu held.
func (r *Relay) admitLocked(id identity, total int) string {
	switch {
	case total >= r.maxConns:
		return fmt.Sprintf("the relay has reached its limit of %d connections; try again later", r.maxConns)
	case !id.isOwner() && total >= r.maxConns-r.limits.ownerConns:
		return fmt.Sprintf("the relay has %d connections open and keeps the last %d of its %d for its owner; try again later",
			total, r.limits.ownerConns, r.maxConns)
	}
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	tu := r.usage.useLocked(id.hash)
	if id.isDevice() && tu.conns >= r.limits.connsPerToken {
		r.usage.forgetLocked(id.hash, tu, r.maxNewConvs, time.Now())
		return fmt.Sprintf("this device's token (%q) already has %d connections open, the most one token may have: close some, or give each device a token of its own",
			id.device, r.limits.connsPerToken)
	}
	tu.conns++
	return ""
}

// leave uncounts a connection admitLocked counted.
func (r *Relay) leave(id identity) {
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	if tu := r.usage.byToken[id.hash]; tu != nil {
		tu.conns--
		r.usage.forgetLocked(id.hash, tu, r.maxNewConvs, time.Now())
	}
}

// takeNewConv takes one of the token's new conversations of this minute.
func (r *Relay) takeNewConv(id identity) bool {
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	tu := r.usage.useLocked(id.hash)
	now := time.Now()
	if !tu.started {
		tu.newConvs, tu.started = tokenBucket{tokens: float64(r.maxNewConvs), at: now}, true
	}
	ok := tu.newConvs.take(r.maxNewConvs, now)
	r.usage.forgetLocked(id.hash, tu, r.maxNewConvs, now)
	return ok
}

// reserveFrameBytes takes n bytes of the budget of frames being received
// for a frame of id, if there is room: in the relay's budget (the owner's
// reserve left aside for anyone else) and in the token's own.
func (r *Relay) reserveFrameBytes(id identity, n int) bool {
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	limit := int64(r.maxPendingFrames)
	if !id.isOwner() {
		limit -= r.limits.ownerPending
	}
	if r.usage.pending+int64(n) > limit {
		return false
	}
	tu := r.usage.useLocked(id.hash)
	if id.isDevice() && tu.pending+int64(n) > r.limits.pendingPerToken {
		return false
	}
	tu.pending += int64(n)
	r.usage.pending += int64(n)
	return true
}

// releaseFrameBytes gives back n bytes reserveFrameBytes took for id.
func (r *Relay) releaseFrameBytes(id identity, n int) {
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	r.usage.pending -= int64(n)
	if tu := r.usage.byToken[id.hash]; tu != nil {
		tu.pending -= int64(n)
		r.usage.forgetLocked(id.hash, tu, r.maxNewConvs, time.Now())
	}
}

// framesRefused is the sentence of a frame dropped because the budget of
// frames being received had no room for it.
func (r *Relay) framesRefused(id identity) string {
	mib := func(n int64) string { return fmt.Sprintf("%g MiB", float64(n)/(1<<20)) }
	if id.isDevice() {
		return fmt.Sprintf("the relay is receiving too many large frames at once (%s in all, %s from one device token, its limits): this frame was dropped; send it again in a moment",
			mib(int64(r.maxPendingFrames)-r.limits.ownerPending), mib(r.limits.pendingPerToken))
	}
	return fmt.Sprintf("the relay is receiving too many large frames at once (%s in all, its limit): this frame was dropped; send it again in a moment", mib(int64(r.maxPendingFrames)))
}

// replaysLocked reports whether a subscribe with since and epoch would
// replay stored events (subscribeLocked).
func (c *conversation) replaysLocked(since *int64, epoch string) bool {
	return (epoch != "" && epoch != c.r.epoch) || (since != nil && *since < c.sentSeq)
}

// mayReplay takes one of the connection's replays of this minute, or
// sends error limit: a replay reads the stored history, and a client
// subscribing from seq 0 in a loop (5,000 times in 10 s, issue #33) took
// the relay's CPU from everyone else. A subscribe with nothing to replay
// is free.
func (c *conn) mayReplay(id string) bool {
	if c.replays.take(c.r.maxReplays, time.Now()) {
		return true
	}
	c.sendError(&protocol.Error{Code: protocol.CodeLimit, Type: protocol.TypeSubscribe, ConversationID: id,
		Message: fmt.Sprintf("this connection has asked for %d replays in the last minute, the most the relay allows: wait a little, or subscribe from the last seq you have", c.r.maxReplays)})
	return false
}
