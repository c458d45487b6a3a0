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

// Commands for a conversation another relay runs (cluster.go): the relay
// a client is connected to forwards them to the owner (forward), which
// runs them as if its own client had sent them (runForwarded) and answers
// with the error, if any, that goes back to the client.

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
// the conversation over, for up to unreachableWait. Without a cluster it
// reports false.
//
// It runs on c.ctx, which a client going away does not cut: forward runs
// in c's read loop (dispatch), and c.ctx is cancelled only once that loop
// has returned, or with the relay's own context when it stops. A command
// whose sender left meanwhile is forwarded and run all the same; only
// its answer finds no one.
func (r *Relay) forward(c *conn, msgType, id string, data any, before func()) (handled bool) {
	if r.cluster == nil {
		return false // a relay alone runs every conversation
	}
	if e := r.storeUnreachable(msgType, id); e != nil {
		c.refuse(data, e)
		return true
	}
	deadline := time.Now().Add(unreachableWait)
	moved := 0
	for {
		owner, err := r.routeCommand(c.ctx, id)
		if isNotVisible(err) {
			c.refuse(data, notVisible(msgType, id, err))
			return true
		}
		if err != nil {
			c.refuse(data, clusterUnreachable(msgType, id, err))
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
			c.refuse(data, clusterUnreachable(msgType, id, err))
			return true
		}
		var rep forwardReply
		if err := json.Unmarshal(answer, &rep); err != nil {
			c.refuse(data, clusterUnreachable(msgType, id, fmt.Errorf("a bad answer from relay %s: %w", owner, err)))
			return true
		}
		if rep.NotOwner {
			if moved++; moved < 3 {
				continue // it lost the conversation meanwhile: ask again
			}
			c.refuse(data, clusterUnreachable(msgType, id, errors.New("its owner keeps changing")))
			return true
		}
		if rep.Error != nil {
			c.refuse(data, rep.Error)
		}
		return true
	}
}

// startWait bounds how long the answer to a forwarded send waits for its
// turn's start to be stored (startLost): an append, unless the store is
// in trouble, when the answer goes without waiting longer. Well within
// the forward's own bound (10 s with JetStream), past which the sender
// would be told the owner does not answer while its turn runs.
const startWait = 3 * time.Second

// startLost waits until the turn's start is stored or lost, for up to
// startWait, and reports whether it was lost: the sender, on another
// relay, is then answered to send again, as the owner cannot reach it
// later (a send's own connection is answered by settleStartLocked).
func (r *Relay) startLost(ctx context.Context, t *turn) bool {
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	select {
	case <-t.started:
	case <-ctx.Done():
		return false
	}
	return t.startLost // written before started was closed
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
	switch req.Data.(type) {
	case *protocol.Send, *protocol.SetMode, *protocol.UserInputResponse:
		if f.By == nil {
			// Its sender becomes the turn's, the switch's or the
			// answer's "by": a peer that names none (another version,
			// a bad peer) is refused, not run with a nil sender.
			return reply(forwardReply{Error: &protocol.Error{Code: protocol.CodeMissingField, Type: req.Type, ConversationID: id,
				Message: "a forwarded command names no sender (by)"}})
		}
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
		var t *turn
		if t, e = r.startSendFrom(ctx, d, f.By, nil, nil); t != nil && r.startLost(ctx, t) {
			e = lostCommand(protocol.TypeSend, id)
		}
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
