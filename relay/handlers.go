package relay

import (
	"context"
	"fmt"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

var pongFrame, _ = protocol.Encode(protocol.TypePong, nil)

// dispatch runs one valid request on the connection's handler goroutine.
func (r *Relay) dispatch(c *conn, req protocol.Request) {
	if !protocol.RoleAllows(c.id.role, req.Type) {
		c.forbid(req) // the connection stays open
		return
	}
	switch d := req.Data.(type) {
	case nil:
		if req.Type == protocol.TypePing {
			c.enqueue(pongFrame)
		}
	case *protocol.List:
		r.list(c, d)
	case *protocol.Subscribe:
		r.subscribe(c, d)
	case *protocol.ConversationRef:
		switch req.Type {
		case protocol.TypeUnsubscribe:
			r.unsubscribe(c, d.ConversationID)
		case protocol.TypeClose:
			if c.mayCreate(req.Type, d.ConversationID) {
				r.closeConversation(c, d)
			}
		case protocol.TypeDelete:
			if r.forward(c, req.Type, d.ConversationID, d, nil) {
				return
			}
			id := d.ConversationID
			r.deleteConversation(c.ctx, id, nil, func(err error) {
				// Its subscribers get copilot:error; the connection that
				// asked may not be one, and must not be left without an
				// answer. limit, as for a send while the store fails: the
				// store's trouble, not the request's.
				c.sendError(&protocol.Error{Code: protocol.CodeLimit, Type: protocol.TypeDelete, ConversationID: id,
					Message: fmt.Sprintf("the conversation could not be deleted, its history is kept as it was: %v", err)})
			})
		}
	case *protocol.Send:
		if ok, size := userMessageFits(d, c.id.by(), r.agentLabel()); !ok {
			// The prompt goes back to every subscriber as
			// copilot:user_message, which must fit a frame too.
			c.refuse(d, &protocol.Error{Code: protocol.CodeTooLarge, Type: protocol.TypeSend, ConversationID: d.ConversationID,
				Message: fmt.Sprintf("the prompt is too long: its copilot:user_message would be %d bytes, over the %d-byte frame limit; send a shorter prompt", size, protocol.MaxFrameBytes)})
			return
		}
		if c.mayCreate(protocol.TypeSend, d.ConversationID) {
			r.sendPrompt(c, d)
		}
	case *protocol.Abort:
		r.abort(c, d)
	case *protocol.SetMode:
		if c.mayCreate(protocol.TypeSetMode, d.ConversationID) {
			r.setMode(c, d)
		}
	case *protocol.UserInputResponse:
		r.respond(c, d)
	case *protocol.Diff:
		r.diff(c, d)
	case *protocol.Restore:
		if c.mayCreate(protocol.TypeRestore, d.ConversationID) {
			r.restore(c, d)
		}
	case *protocol.WorkspacesRequest:
		r.workspacesAnswer(c)
	default:
		r.log.Error("relay: request without a handler", "type", req.Type)
	}
}

// ---- subscriptions ----

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
	// What is stored now, so that copilot:subscribed says it; and a
	// conversation whose relay is gone with a turn open is taken over.
	defer r.joinRemote(c.ctx, d.ConversationID)()
	for {
		var conv *conversation
		var rp *replay
		err := r.withConversation(c.ctx, d.ConversationID, func(cv *conversation) {
			if c.subs[cv.id] != cv && !c.canSubscribe(protocol.TypeSubscribe, cv.id) {
				return
			}
			if cv.replaysLocked(d.SinceSeq, d.Epoch) && !c.mayReplay(cv.id) {
				return
			}
			conv = cv
			c.subs[cv.id] = cv
			rp = cv.subscribeLocked(c, d.SinceSeq, d.Epoch)
		})
		if err != nil || conv == nil {
			return
		}
		r.followWatched(conv)
		if rp == nil {
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
	r.refollow(conv) // the linger, if it was the last one
}

// ---- commands on a conversation: abort, set_mode, close, delete, prune ----

// abort handles copilot:abort.
func (r *Relay) abort(c *conn, d *protocol.Abort) {
	notStreaming := func() {
		c.sendError(&protocol.Error{Code: protocol.CodeNotStreaming, Type: protocol.TypeAbort, ConversationID: d.ConversationID,
			Message: "there is no running stream to abort"})
	}
	var conv *conversation
	if d.ConversationID == "" {
		conv = r.lastActiveStream()
		id := ""
		if conv != nil {
			id = conv.id
		}
		r.log.Warn("relay: copilot:abort without conversationId is deprecated (send data.conversationId); aborting the last active stream", "conversationId", id)
		if conv == nil || !conv.abort(errAborted) {
			notStreaming()
		}
		return
	}
	if r.forward(c, protocol.TypeAbort, d.ConversationID, d, nil) {
		return
	}
	if e := r.abortConversation(d); e != nil {
		c.sendError(e)
	}
}

// abortConversation aborts the conversation's running turn, or returns
// error not_streaming.
func (r *Relay) abortConversation(d *protocol.Abort) *protocol.Error {
	if conv := r.lookupConversation(d.ConversationID); conv != nil {
		conv.mu.Lock()
		// Lost to another relay since the abort was routed here, its
		// turn runs there, and "not streaming" would be untrue.
		lost := conv.lostLocked(protocol.TypeAbort)
		aborted := lost == nil && conv.abortLocked(errAborted)
		conv.mu.Unlock()
		if lost != nil {
			return lost
		}
		if aborted {
			return nil
		}
	}
	return &protocol.Error{Code: protocol.CodeNotStreaming, Type: protocol.TypeAbort, ConversationID: d.ConversationID,
		Message: "there is no running stream to abort"}
}

// lastActiveStream is the conversation of the most recently started stream
// that is still running, or nil.
func (r *Relay) lastActiveStream() *conversation {
	r.streamsMu.Lock()
	defer r.streamsMu.Unlock()
	var last streamStart
	for _, s := range r.streamsRun {
		if s.seq > last.seq {
			last = s
		}
	}
	return last.conv
}

// setMode handles copilot:set_mode: the mode changes at once, mid-stream
// too; the next permission request reads it.
func (r *Relay) setMode(c *conn, d *protocol.SetMode) {
	if r.forward(c, protocol.TypeSetMode, d.ConversationID, d, nil) {
		return
	}
	if e := r.setModeBy(c.ctx, d, c.id.by()); e != nil {
		c.sendError(e)
	}
}

// setModeBy changes the conversation's mode for by, or returns the error
// to answer with.
func (r *Relay) setModeBy(ctx context.Context, d *protocol.SetMode, by *protocol.By) *protocol.Error {
	var lost *protocol.Error
	_ = r.withConversation(ctx, d.ConversationID, func(conv *conversation) {
		// Lost to another relay since the command was routed here, a
		// mode set here would decide nothing (the owner asks the
		// permissions) and emit nothing.
		if lost = conv.lostLocked(protocol.TypeSetMode); lost == nil {
			conv.setModeByLocked(d.Mode, by)
		}
	})
	return lost
}

// setModeByLocked changes the mode for by (nil: nobody named), whom
// copilot:mode_changed names so that every client can say who switched.
// The relay's own device is not named: a relay used with its own token
// only (no device tokens) sends the message exactly as the seed has it.
func (c *conversation) setModeByLocked(mode protocol.Mode, by *protocol.By) {
	if by != nil && by.Device == protocol.OwnDevice {
		by = nil
	}
	c.mode = mode
	if c.turn != nil && mode == protocol.ModeAct {
		c.turn.cp.act = true // its changes are recorded (checkpoints.go)
	}
	mc := protocol.ModeChanged{Mode: mode, ChangedBy: by}
	c.emitLocked(protocol.TypeModeChanged, &mc.Header, &mc)
}

// closeConversation handles copilot:close: it aborts a running turn, closes
// the agent session and emits copilot:shutdown (the agent's own, or one with
// zero usage when the agent reported none).
func (r *Relay) closeConversation(c *conn, d *protocol.ConversationRef) {
	if r.forward(c, protocol.TypeClose, d.ConversationID, d, nil) {
		return
	}
	_ = r.withConversation(c.ctx, d.ConversationID, (*conversation).startCloseLocked)
}

// startCloseLocked aborts the running turn and starts closing the agent
// session on a goroutine of its own; closing is set until that is done.
func (c *conversation) startCloseLocked() {
	if c.closing != nil {
		// A close is already under way. Its copilot:shutdown may have
		// gone out already (the agent's own, emitted while its session
		// closes), before this close was sent: every close is answered,
		// so this one gets its own once that close is done.
		c.closeAgain = true
		return
	}
	ch := make(chan struct{})
	c.closing = ch
	t := c.turn
	c.abortLocked(errClosed)
	started := c.r.track(&c.r.work, func() {
		defer close(ch)
		if t != nil {
			<-t.done
		}
		emitted := c.closeSession()
		c.finishClose(emitted)
	})
	if !started {
		c.closing = nil
		close(ch)
	}
}

// finishClose ends a close: a copilot:shutdown with zero usage stands in for
// the agent's when it emitted none. A close that came meanwhile found the
// session closing: it gets one too, as a close of no session does.
func (c *conversation) finishClose(shutdownEmitted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = nil
	emits := 0
	if !shutdownEmitted {
		emits++
	}
	if c.closeAgain {
		c.closeAgain = false
		emits++
	}
	for range emits {
		sd := protocol.Shutdown{ModelMetrics: emptyObject}
		c.emitLocked(protocol.TypeShutdown, &sd.Header, &sd)
	}
}

// sessionCloseTimeout bounds Session.Close for copilot:close and
// copilot:delete.
const sessionCloseTimeout = 30 * time.Second

// closeSession closes the conversation's agent session, if one is open, and
// reports whether the agent emitted a Shutdown while closing.
func (c *conversation) closeSession() (shutdownEmitted bool) {
	c.mu.Lock()
	s, h := c.sess, c.host
	c.sess, c.host = nil, nil
	c.mu.Unlock()
	if s == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), sessionCloseTimeout)
	defer cancel()
	before := h.shutdowns.Load()
	if err := s.Close(ctx); err != nil {
		c.r.log.Warn("relay: close agent session", "conversationId", c.id, "err", err)
	}
	h.dead.Store(true)
	if h.cancelOpen != nil {
		h.cancelOpen()
	}
	return h.shutdowns.Load() > before
}

// deleteConversation handles copilot:delete: it aborts a running turn, closes
// the agent session, removes the history from the store and tells the
// subscribers (copilot:deleted). Until that is done, requests naming the
// conversation wait, so that they see the new, empty one.
// When onlyLocked is not nil, the conversation is deleted only if onlyLocked,
// called under the conversation's lock, says so; deleteConversation reports
// whether it started the delete. failed, if not nil, is called with the
// store's error if the delete fails.
func (r *Relay) deleteConversation(ctx context.Context, id string, onlyLocked func(*conversation) bool, failed func(error)) bool {
	started := false
	_ = r.withConversation(ctx, id, func(conv *conversation) {
		if onlyLocked != nil && !onlyLocked(conv) {
			return
		}
		started = conv.startDeleteLocked(failed)
	})
	return started
}

// startDeleteLocked aborts the running turn and starts the delete on a
// goroutine of its own; deleting is set until that is done. It reports
// false, and deletes nothing, once the relay is shutting down.
func (c *conversation) startDeleteLocked(failed func(error)) bool {
	r := c.r
	ch := make(chan struct{})
	c.deleting = ch
	t := c.turn
	c.abortLocked(errDeleted)
	closing := c.closing
	dir, gone := c.checkpointRefsDirLocked()
	started := r.track(&r.work, func() {
		defer close(ch)
		if t != nil {
			<-t.done
		}
		if closing != nil {
			<-closing
		}
		c.closeSession()
		c.releaseWorkspace() // a worktree's work is committed on its branch first
		rec := record{kind: recDelete, conv: c, done: make(chan error, 1)}
		err := errShutdown
		if r.commit.push(rec) {
			err = <-rec.done
		}
		if err == nil {
			r.dropCheckpoints(c, dir, gone)
		}
		c.finishDeleteAttempt(err)
		if err != nil && failed != nil {
			failed(err)
		}
	})
	if !started {
		c.deleting = nil
		close(ch)
	}
	return started
}

// finishDeleteAttempt ends a delete; one that failed is reported to the
// subscribers as copilot:error.
func (c *conversation) finishDeleteAttempt(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deleting = nil
	if err != nil && !c.deleted.Load() {
		c.emitErrorLocked(fmt.Sprintf("the conversation could not be deleted: %v", err))
	}
}

// PruneIdle deletes, as copilot:delete does (subscribers get
// copilot:deleted, the history leaves the store), every conversation that is
// not streaming and was last updated before cutoff. It returns how many it
// deleted. `serve --history-max-age` calls it periodically.
//
// In a cluster a relay deletes only conversations it owns, as its delete
// tells the other relays (their subscribers get copilot:deleted, their
// lists drop it): one another relay owns is left to that relay's own
// pruning; one whose owner is gone (none, or its lease lapsed) is claimed
// first, so that exactly one relay deletes it.
func (r *Relay) PruneIdle(ctx context.Context, cutoff time.Time) int {
	r.mu.Lock()
	ids := make([]string, 0, len(r.convs))
	for id := range r.convs {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	n := 0
	for _, id := range ids {
		conv := r.lookupConversation(id)
		if conv == nil {
			continue // deleted meanwhile; withConversation would recreate it
		}
		if !r.claimToPrune(ctx, conv, cutoff) {
			continue
		}
		if r.deleteConversation(ctx, id, func(c *conversation) bool {
			return c.own.here && c.turn == nil && c.updatedAt.Before(cutoff)
		}, nil) {
			n++
		}
	}
	return n
}
