package relay

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

var pongFrame, _ = protocol.Encode(protocol.TypePong, nil)

// dispatch runs one valid request on the connection's handler goroutine.
func (r *Relay) dispatch(c *conn, req protocol.Request) {
	switch d := req.Data.(type) {
	case nil:
		switch req.Type {
		case protocol.TypePing:
			c.enqueue(pongFrame)
		case protocol.TypeList:
			c.send(protocol.TypeConversations, r.list())
		}
	case *protocol.Subscribe:
		r.subscribe(c, d)
	case *protocol.ConversationRef:
		switch req.Type {
		case protocol.TypeUnsubscribe:
			r.unsubscribe(c, d.ConversationID)
		case protocol.TypeClose:
			r.closeConversation(c, d)
		case protocol.TypeDelete:
			r.deleteConversation(c.ctx, d.ConversationID, nil)
		}
	case *protocol.Send:
		r.send(c, d)
	case *protocol.Abort:
		r.abort(c, d)
	case *protocol.SetMode:
		r.setMode(c, d)
	case *protocol.UserInputResponse:
		r.respond(c, d)
	default:
		r.log.Error("relay: request without a handler", "type", req.Type)
	}
}

// canSubscribe reports whether the connection may hold one more
// subscription, and sends error limit if not.
func (c *conn) canSubscribe(msgType, conversationID string) bool {
	if len(c.subs) < c.r.maxSubs {
		return true
	}
	// Subscriptions to deleted conversations no longer count.
	for id, conv := range c.subs {
		if conv.deleted.Load() {
			delete(c.subs, id)
		}
	}
	if len(c.subs) < c.r.maxSubs {
		return true
	}
	c.sendError(&protocol.Error{Code: protocol.CodeLimit, Type: msgType, ConversationID: conversationID,
		Message: fmt.Sprintf("this connection has reached its limit of %d subscriptions: unsubscribe from one first", c.r.maxSubs)})
	return false
}

// subscribe handles copilot:subscribe.
func (r *Relay) subscribe(c *conn, d *protocol.Subscribe) {
	for {
		var conv *conversation
		var rp *replay
		err := r.withConversation(c.ctx, d.ConversationID, func(cv *conversation) {
			if c.subs[cv.id] != cv && !c.canSubscribe(protocol.TypeSubscribe, cv.id) {
				return
			}
			conv = cv
			c.subs[cv.id] = cv
			rp = cv.subscribeLocked(c, d.SinceSeq)
		})
		if err != nil || conv == nil || rp == nil {
			return
		}
		if conv.catchUp(c, rp) {
			return
		}
		// Deleted during the replay: subscribe to the new conversation.
		delete(c.subs, conv.id)
	}
}

// unsubscribe handles copilot:unsubscribe; an unknown subscription is
// ignored.
func (r *Relay) unsubscribe(c *conn, id string) {
	conv := c.subs[id]
	if conv == nil {
		return
	}
	delete(c.subs, id)
	conv.unsubscribe(c)
	r.forgetIfEmpty(conv)
}

// list is copilot:conversations: every conversation that has an event, most
// recently updated first.
func (r *Relay) list() *protocol.Conversations {
	r.mu.Lock()
	convs := make([]*conversation, 0, len(r.convs))
	for _, c := range r.convs {
		convs = append(convs, c)
	}
	r.mu.Unlock()
	type entry struct {
		info    protocol.ConversationInfo
		updated time.Time
	}
	entries := make([]entry, 0, len(convs))
	for _, c := range convs {
		c.mu.Lock()
		if !c.deleted.Load() && c.deleting == nil && c.lastSeq > 0 {
			entries = append(entries, entry{protocol.ConversationInfo{
				ConversationID: c.id,
				Title:          c.title,
				UpdatedAt:      c.updatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
				Streaming:      c.streaming,
				Mode:           c.mode,
			}, c.updatedAt})
		}
		c.mu.Unlock()
	}
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(b.updated.Compare(a.updated), cmp.Compare(a.info.ConversationID, b.info.ConversationID))
	})
	out := &protocol.Conversations{Conversations: make([]protocol.ConversationInfo, len(entries))}
	for i, e := range entries {
		out.Conversations[i] = e.info
	}
	return out
}
