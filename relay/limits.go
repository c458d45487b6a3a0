package relay

import (
	"fmt"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// Every resource a client can make the relay hold has a limit, answered
// with `error` code limit (docs/protocol.md, Limits and flow control):
// connections (serveWS), subscriptions per connection (canSubscribe), new
// conversations per connection per minute (here), frames being received
// (conn.readFrame) and, for what a connection is sent, its send queue and
// a replay's window (conn.go).

// tokenBucket allows a burst of size tokens, refilled at size per minute.
// It belongs to one connection's handler goroutine.
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
// about conversation id, and sends error limit if not: each connection
// creates at most maxNewConvs conversations a minute, so that one client
// cannot fill the relay's list and store with thousands in a second.
func (c *conn) mayCreate(msgType, id string) bool {
	if !c.r.createsConversation(id) || c.newConvs.take(c.r.maxNewConvs, time.Now()) {
		return true
	}
	c.sendError(&protocol.Error{Code: protocol.CodeLimit, Type: msgType, ConversationID: id,
		Message: fmt.Sprintf("this connection has created %d conversations in the last minute, the most the relay allows: wait a little, or go on with one that exists", c.r.maxNewConvs)})
	return false
}
