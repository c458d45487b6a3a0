package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/session"
)

// inputRequest is one Host.Ask waiting for its answer. A conversation has at
// most one open request; later ones wait in its queue and are sent only when
// the open one is answered, times out or is cancelled. Once opened, its
// fields are guarded by the conversation's mu.
type inputRequest struct {
	id        string
	turn      *turn // the turn that asked; nil outside a turn
	data      protocol.UserInputRequest
	encoded   []byte // data as JSON, kept as the conversation's PendingInput
	result    chan inputResult
	settled   bool
	stopTimer func() bool // stops the timeout (Config.InputTimer), nil when it waits forever
}

type inputResult struct {
	answer session.Answer
	err    error
}

var noAnswer = session.Answer{Index: -1}

// ask implements Host.Ask.
func (c *conversation) ask(ctx context.Context, req session.InputRequest) (session.Answer, error) {
	switch req.InputType {
	case "", protocol.InputText, protocol.InputApproval, protocol.InputChoice:
	default:
		return noAnswer, c.rejectAsk(fmt.Sprintf("the agent asked a question of unknown input type %q; it was not shown", req.InputType),
			fmt.Errorf("%w: unknown input type %q", session.ErrInvalidRequest, req.InputType))
	}
	if (req.InputType == protocol.InputApproval || req.InputType == protocol.InputChoice) && len(req.Choices) == 0 {
		return noAnswer, c.rejectAsk(fmt.Sprintf("the agent asked for a %s with no choices; the request was not shown", req.InputType),
			fmt.Errorf("%w: a %s request needs choices", session.ErrInvalidRequest, req.InputType))
	}
	if err := ctx.Err(); err != nil {
		return noAnswer, err
	}
	allow := req.InputType == "" || req.InputType == protocol.InputText
	if req.AllowFreeform != nil {
		allow = *req.AllowFreeform
	}
	ir := &inputRequest{
		id: uuid.NewString(),
		data: protocol.UserInputRequest{
			Question:      req.Question,
			Choices:       slices.Clone(req.Choices),
			AllowFreeform: allow,
			InputType:     req.InputType,
		},
		result: make(chan inputResult, 1),
	}
	ir.data.RequestID = ir.id
	if !fitQuestion(c.id, &ir.data) {
		return noAnswer, c.rejectAsk(fmt.Sprintf("the agent asked a question whose choices are over the %d-byte frame limit; it was not shown", protocol.MaxFrameBytes),
			fmt.Errorf("%w: the choices are too long for a frame", session.ErrInvalidRequest))
	}

	c.mu.Lock()
	if c.deleted.Load() || c.deleting != nil {
		c.mu.Unlock()
		return noAnswer, context.Canceled
	}
	if err := ctx.Err(); err != nil {
		// Looked at again under the lock, which an abort or a rejection
		// holds while it cancels the turn and withdraws its questions: a
		// question that comes after it is never shown.
		c.mu.Unlock()
		return noAnswer, err
	}
	ir.turn = c.turn
	if c.openInput == nil {
		c.openInputLocked(ir)
	} else {
		c.inputQueue = append(c.inputQueue, ir)
		c.countQueuedLocked()
	}
	c.mu.Unlock()

	select {
	case res := <-ir.result:
		return res.answer, res.err
	case <-ctx.Done():
		c.mu.Lock()
		c.cancelInputLocked(ir, ctx.Err())
		c.mu.Unlock()
		res := <-ir.result // the first outcome wins, whichever it was
		return res.answer, res.err
	}
}

// rejectAsk reports a malformed request as copilot:error and returns err.
func (c *conversation) rejectAsk(msg string, err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.log.Warn("relay: invalid input request from the agent", "conversationId", c.id, "err", err)
	c.emitErrorLocked(msg)
	return err
}

// openInputLocked sends the request to the subscribers and starts its
// timer: now, not while it waited in the queue. expiresAt tells every
// client when the timer fires, on the relay's clock, which is the only one
// (clients correct it by the skew they measure from serverTime).
func (c *conversation) openInputLocked(ir *inputRequest) {
	c.openInput = ir
	ir.data.Header = protocol.Header{ConversationID: c.id, Seq: c.lastSeq + 1}
	ir.data.Queued = len(c.inputQueue)
	if c.r.inputTimeout > 0 {
		ir.data.ExpiresAt = protocol.FormatTime(time.Now().Add(c.r.inputTimeout))
		ir.stopTimer = c.r.inputTimer(c.r.inputTimeout, func() { c.inputTimedOut(ir) })
	}
	ir.encoded, _ = json.Marshal(&ir.data)
	d := ir.data
	c.emitLocked(protocol.TypeUserInputRequest, &d.Header, &d)
}

// countQueuedLocked updates the open request's count of questions queued
// behind it, which copilot:subscribed's pendingInput carries from then on
// (the event that opened it keeps the count it had then).
func (c *conversation) countQueuedLocked() {
	if c.openInput != nil {
		c.openInput.data.Queued = len(c.inputQueue)
	}
}

// settleLocked resolves a request once; later outcomes are ignored.
func (c *conversation) settleLocked(ir *inputRequest, res inputResult) bool {
	if ir.settled {
		return false
	}
	ir.settled = true
	if ir.stopTimer != nil {
		ir.stopTimer()
	}
	ir.result <- res
	return true
}

// nextInputLocked opens the first queued request, if any.
func (c *conversation) nextInputLocked() {
	c.openInput = nil
	for len(c.inputQueue) > 0 {
		ir := c.inputQueue[0]
		c.inputQueue = slices.Delete(c.inputQueue, 0, 1)
		if !ir.settled {
			c.openInputLocked(ir)
			return
		}
	}
}

// closeOpenLocked closes the open request: closed tells the subscribers why,
// and by who answered or rejected it (nil when nobody did).
func (c *conversation) closeOpenLocked(reason string, by *protocol.By, res inputResult) {
	ir := c.openInput
	c.openInput = nil // PendingInput of the closing event is empty
	d := protocol.UserInputClosed{RequestID: ir.id, Reason: reason, AnsweredBy: by}
	c.emitLocked(protocol.TypeUserInputClosed, &d.Header, &d)
	c.settleLocked(ir, res)
}

// cancelInputLocked withdraws one request (its Ask's context ended).
func (c *conversation) cancelInputLocked(ir *inputRequest, err error) {
	if ir.settled {
		return
	}
	if c.openInput == ir {
		c.closeOpenLocked(protocol.ClosedAborted, nil, inputResult{answer: noAnswer, err: err})
		c.nextInputLocked()
		return
	}
	c.inputQueue = slices.DeleteFunc(c.inputQueue, func(q *inputRequest) bool { return q == ir })
	c.countQueuedLocked()
	c.settleLocked(ir, inputResult{answer: noAnswer, err: err})
}

// closeInputsLocked rejects every open and queued request of turn t (all of
// them when t is nil), clears their timers, and tells the subscribers about
// the open one (reason aborted).
func (c *conversation) closeInputsLocked(t *turn, err error) {
	mine := func(ir *inputRequest) bool { return t == nil || ir.turn == t }
	for _, ir := range c.inputQueue {
		if mine(ir) {
			c.settleLocked(ir, inputResult{answer: noAnswer, err: err})
		}
	}
	c.inputQueue = slices.DeleteFunc(c.inputQueue, mine)
	c.countQueuedLocked()
	if c.openInput != nil && mine(c.openInput) {
		c.closeOpenLocked(protocol.ClosedAborted, nil, inputResult{answer: noAnswer, err: err})
		c.nextInputLocked()
	}
}

// inputTimedOut runs when a request's timer fires: copilot:user_input_timeout
// goes out first, then Ask fails with ErrTimeout and the stream goes on.
func (c *conversation) inputTimedOut(ir *inputRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ir.settled || c.openInput != ir {
		return // answered or cancelled in time: no timeout message
	}
	c.openInput = nil
	allow := ir.data.AllowFreeform
	d := protocol.UserInputTimeout{RequestID: ir.id, Question: ir.data.Question, Choices: ir.data.Choices, AllowFreeform: &allow}
	c.emitLocked(protocol.TypeUserInputTimeout, &d.Header, &d)
	c.settleLocked(ir, inputResult{answer: noAnswer, err: session.ErrTimeout})
	c.nextInputLocked()
}

// respond handles copilot:user_input_response. An unknown or settled
// requestId is ignored; an invalid answer gets invalid_answer and the request
// stays open.
func (r *Relay) respond(c *conn, d *protocol.UserInputResponse) {
	if r.forward(c, protocol.TypeUserInputResponse, d.ConversationID, d, nil) {
		return
	}
	if e := r.answer(d, c.id.by()); e != nil {
		c.sendError(e)
	}
}

// answer settles the open request with d, answered by by, and returns the
// error to answer with, if any.
func (r *Relay) answer(d *protocol.UserInputResponse, by *protocol.By) *protocol.Error {
	conv := r.lookupConversation(d.ConversationID)
	if conv == nil {
		return nil
	}
	conv.mu.Lock()
	defer conv.mu.Unlock()
	if e := conv.lostLocked(protocol.TypeUserInputResponse); e != nil {
		// Lost to another relay since the answer was routed here: the
		// question is open there; ignoring it would lose the answer.
		return e
	}
	ir := conv.openInput
	if ir == nil || ir.id != d.RequestID {
		return nil
	}
	answer, rejected, msg := judgeAnswer(ir.data, d)
	if msg != "" {
		return &protocol.Error{Code: protocol.CodeInvalidAnswer, Type: protocol.TypeUserInputResponse, ConversationID: conv.id, Message: msg}
	}
	if rejected {
		conv.closeOpenLocked(protocol.ClosedRejected, by, inputResult{answer: noAnswer, err: session.ErrRejected})
		if t := ir.turn; t != nil && conv.turn == t {
			// The rejection cancels the stream; the turn ends with idle
			// status rejected, keeping its partial text.
			t.cancel(errRejected)
			conv.closeInputsLocked(t, context.Canceled)
		}
		conv.nextInputLocked()
		return nil
	}
	conv.closeOpenLocked(protocol.ClosedAnswered, by, inputResult{answer: answer})
	conv.nextInputLocked()
	return nil
}

// judgeAnswer checks a response against its request. It returns the answer,
// whether it is a rejection, or a message saying why it is not valid.
func judgeAnswer(req protocol.UserInputRequest, d *protocol.UserInputResponse) (session.Answer, bool, string) {
	if d.Rejected {
		return noAnswer, true, ""
	}
	text := d.Answer
	if strings.TrimSpace(text) == "" {
		return noAnswer, false, "the answer is empty: answer the question, or send rejected: true to reject it"
	}
	if req.InputType == protocol.InputApproval {
		switch text {
		case protocol.AnswerApprove:
			return session.Answer{Text: text, Index: 0}, false, ""
		case protocol.AnswerReject:
			return noAnswer, true, ""
		}
		return noAnswer, false, fmt.Sprintf(`an approval is answered with "approve" or "reject", not %q`, truncate(text, 40))
	}
	index := -1
	if d.Index != nil && *d.Index < len(req.Choices) && req.Choices[*d.Index] == text {
		index = *d.Index
	} else {
		index = slices.Index(req.Choices, text)
	}
	if index < 0 && len(req.Choices) > 0 && !req.AllowFreeform {
		return noAnswer, false, fmt.Sprintf("the answer must be one of the choices (%s)", strings.Join(quoteAll(req.Choices), ", "))
	}
	wasFreeform := index < 0
	if d.WasFreeform != nil {
		wasFreeform = *d.WasFreeform
	}
	if wasFreeform {
		index = -1
	}
	return session.Answer{Text: text, WasFreeform: wasFreeform, Index: index}, false, ""
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", truncate(s, 40))
	}
	return out
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
