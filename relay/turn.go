package relay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/session"
)

// Why a turn's context was cancelled; the idle status follows from it.
var (
	errAborted  = errors.New("the user aborted the turn")
	errRejected = errors.New("the user rejected an input request")
	errClosed   = errors.New("the conversation's agent session was closed")
	errDeleted  = errors.New("the conversation was deleted")
)

// turn is one running Session.Run.
type turn struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed after the turn's idle event was emitted

	// Assistant text streamed in this turn, per message, so that an aborted
	// or rejected turn keeps its partial text (docs/protocol.md, Turns).
	// Guarded by the conversation's mu.
	partialOrder []string
	partial      map[string]*strings.Builder
	finished     map[string]bool // messages the agent sent whole

	messageID string            // of the turn's copilot:user_message
	clientID  string            // its copilot:send's clientId, for copilot:subscribed's starting
	cp        turnCheckpoint    // its snapshots (checkpoints.go)
	changes   *protocol.Changes // what it changed, sent before copilot:idle

	// The turn's start: its copilot:user_message, at startSeq, is stored
	// and sent, or never will be (the fence refused it, or the relay was
	// stalled past its lease: the conversation is another relay's). Then
	// started is closed, once (settleStartLocked), and startLost says
	// which. A send whose start is lost is answered as one that reached a
	// lost conversation (lostCommand: send again): its sender, who saw
	// nothing of it, would wait for its turn for good. sender is the
	// connection that sent it here (nil: forwarded, and runForwarded
	// waits for started to answer). Guarded by the conversation's mu.
	startSeq  int64
	started   chan struct{}
	settled   bool
	startLost bool
	sender    *conn
}

// settleStartLocked records the outcome of the turn's start (lost: it was
// never stored) and closes started, the first time; a lost start is
// answered to a sender connected here.
func (t *turn) settleStartLocked(c *conversation, lost bool) {
	if t.settled {
		return
	}
	t.settled, t.startLost = true, lost
	close(t.started)
	if lost {
		c.r.log.Warn("relay: a turn's start was never stored (the conversation was lost as it began): its sender is told to send again", "conversationId", c.id)
		if t.sender != nil {
			e := lostCommand(protocol.TypeSend, c.id)
			e.ClientID = t.clientID
			t.sender.sendError(e)
		}
	}
}

// startUnsentLocked reports whether the conversation's running turn, if
// any, has a start not yet stored and sent.
func (c *conversation) startUnsentLocked() bool {
	t := c.turn
	return t != nil && !t.settled && t.startSeq > c.sentSeq
}

func (t *turn) addDeltaLocked(messageID, content string) {
	b := t.partial[messageID]
	if b == nil {
		if t.partial == nil {
			t.partial = map[string]*strings.Builder{}
		}
		b = &strings.Builder{}
		t.partial[messageID] = b
		t.partialOrder = append(t.partialOrder, messageID)
	}
	b.WriteString(content)
}

func (t *turn) messageSentLocked(messageID string) {
	if t.finished == nil {
		t.finished = map[string]bool{}
	}
	t.finished[messageID] = true
}

// sendPrompt handles copilot:send: it starts a turn unless one is running. The
// sender is subscribed first, implicitly, under the same lock, so no other
// send or delete can come in between. In a cluster, a conversation another
// relay owns gets the sender subscribed here and the send runs there.
func (r *Relay) sendPrompt(c *conn, d *protocol.Send) {
	if r.forward(c, protocol.TypeSend, d.ConversationID, d, func() {
		defer r.joinRemote(c.ctx, d.ConversationID)()
		var sub *conversation
		_ = r.withConversation(c.ctx, d.ConversationID, func(conv *conversation) {
			if c.subs[conv.id] != conv && c.canSubscribe(protocol.TypeSend, conv.id) {
				conv.subscribeLocked(c, nil, "")
				c.subs[conv.id] = conv
				sub = conv
			}
		})
		if sub != nil {
			r.followWatched(sub)
		}
	}) {
		return
	}
	subscribe := func(conv *conversation) bool {
		if c.subs[conv.id] != conv {
			if !c.canSubscribe(protocol.TypeSend, conv.id) {
				return false
			}
			conv.subscribeLocked(c, nil, "") // no since, no copy: nothing to replay
			c.subs[conv.id] = conv
		}
		return true
	}
	if _, e := r.startSendFrom(c.ctx, d, c.id.by(), subscribe, c); e != nil {
		c.refuse(d, e)
	}
}

// startSend starts a turn for d, sent by by, on a conversation this relay
// runs, and returns the error to answer with, if any. subscribeLocked, if
// not nil, subscribes the sender under the conversation's lock first (none
// for a send another relay forwarded), and says whether it could.
func (r *Relay) startSend(ctx context.Context, d *protocol.Send, by *protocol.By, subscribeLocked func(*conversation) bool) *protocol.Error {
	_, e := r.startSendFrom(ctx, d, by, subscribeLocked, nil)
	return e
}

// startSendFrom is startSend for a send from sender (nil: forwarded), and
// returns the turn it started.
func (r *Relay) startSendFrom(ctx context.Context, d *protocol.Send, by *protocol.By, subscribeLocked func(*conversation) bool, sender *conn) (*turn, *protocol.Error) {
	if r.commit.down.Load() {
		// Its events could not be stored, so they could not be sent
		// (storefail.go). A turn that slips past this check as the store
		// fails ends like the running ones, with copilot:error.
		return nil, &protocol.Error{Code: protocol.CodeLimit, Type: protocol.TypeSend, ConversationID: d.ConversationID,
			Message: "the relay cannot save conversation history right now (is its disk full?), so it starts no new turn; it keeps retrying by itself: send again in a moment"}
	}
	if msg := r.budget.refusal(); msg != "" {
		return nil, &protocol.Error{Code: protocol.CodeBudgetExceeded, Type: protocol.TypeSend, ConversationID: d.ConversationID, Message: msg}
	}
	// The turn runs on the relay's agent as it is named now; asked before
	// the conversation's lock, which the backend's own lock never nests in.
	agent := r.agentLabel()
	// start starts the turn on conv, whose workspace is fixed, or returns
	// why not.
	var started *turn
	start := func(conv *conversation) *protocol.Error {
		if e := conv.lostLocked(protocol.TypeSend); e != nil {
			return e // a turn would run the agent for nobody
		}
		if conv.streaming || conv.preparing || conv.restoring {
			return &protocol.Error{Code: protocol.CodeConversationBusy, Type: protocol.TypeSend, ConversationID: d.ConversationID,
				Message: "the conversation is streaming a reply: wait for copilot:idle or abort it first"}
		}
		if msg := conv.otherWorkspaceLocked(d.Workspace); msg != "" {
			return &protocol.Error{Code: protocol.CodeInvalidField, Type: protocol.TypeSend, ConversationID: d.ConversationID, Message: msg}
		}
		if err := conv.visibleLocked(); err != nil {
			return notVisible(protocol.TypeSend, d.ConversationID, err)
		}
		started = conv.startTurnLocked(d, by, agent, sender)
		return nil
	}
	var answer *protocol.Error
	var unfixed *conversation // its first send: the workspace is fixed first
	_ = r.withConversation(ctx, d.ConversationID, func(conv *conversation) {
		busy := !conv.own.here || conv.streaming || conv.preparing || conv.restoring
		if !busy && conv.workspace.IsZero() {
			if subscribeLocked != nil && !subscribeLocked(conv) {
				return
			}
			conv.preparing, conv.preparingID = true, d.ClientID
			unfixed = conv
			return
		}
		if busy {
			answer = start(conv) // refused
			return
		}
		if subscribeLocked != nil && !subscribeLocked(conv) {
			return
		}
		answer = start(conv)
	})
	if unfixed != nil {
		answer = r.fixWorkspace(ctx, unfixed, d, start)
	}
	return started, answer
}

// startTurnLocked starts a turn for d, sent by by, on the agent named agent:
// the mode and the user message are emitted, and runTurn runs the agent on a
// goroutine of its own. The conversation records agent as the one that runs
// it (the list's entries say it), and the user message carries it, so a
// client notes where a conversation's agent changed. sender is the
// connection the send came from here (nil: forwarded). It returns the
// turn, nil if none started (the relay is stopping).
func (c *conversation) startTurnLocked(d *protocol.Send, by *protocol.By, agent string, sender *conn) *turn {
	r := c.r
	ctx, cancel := context.WithCancelCause(r.ctx)
	t := &turn{ctx: ctx, cancel: cancel, done: make(chan struct{}), messageID: uuid.NewString(), clientID: d.ClientID, started: make(chan struct{}), sender: sender}
	mode := d.Mode
	if mode == "" {
		mode = protocol.ModeAct
	}
	t.cp.dir = c.checkpointDirLocked()
	t.cp.act = mode == protocol.ModeAct
	prompt, model := d.Prompt, d.Model
	started := r.track(&r.work, func() { r.runTurn(c, t, prompt, model) })
	if !started {
		cancel(errShutdown)
		return nil
	}
	if mode != c.mode {
		c.setModeByLocked(mode, by)
	}
	if c.title == "" {
		c.title = titleOf(prompt)
	}
	if model != "" {
		c.model = model
	}
	c.agent = agent
	c.streaming = true
	c.turn = t
	um := protocol.UserMessage{MessageID: t.messageID, Content: prompt, Mode: mode, SentBy: by, ClientID: d.ClientID}
	if ok, _ := userMessageFits(d, by, agent); ok {
		// Checked by the relay that took the send (handlers.go), whose
		// agent may be named otherwise than this one's (a forwarded send):
		// rather than cut the prompt, the echo goes without the name.
		um.Agent = agent
	}
	c.emitLocked(protocol.TypeUserMessage, &um.Header, &um)
	t.startSeq = c.lastSeq
	if c.failure.failed {
		// Its start is not kept; the turn stops with the failure's
		// error and idle, which its sender gets.
		t.settleStartLocked(c, false)
	}

	r.streamsMu.Lock()
	r.streamSeq++
	r.streamsRun[t] = streamStart{conv: c, seq: r.streamSeq}
	r.streamsMu.Unlock()
	return t
}

// runTurn is a turn's goroutine: it opens the agent session if needed, runs
// the turn and closes it with copilot:idle. It starts while startTurnLocked
// still holds the conversation's lock, and so waits for the user message to
// be emitted.
func (r *Relay) runTurn(conv *conversation, t *turn, prompt, model string) {
	defer t.cancel(nil)
	r.snapshotBefore(conv, t)
	sess, err := conv.session(t.ctx, model)
	var runErr error
	if err != nil {
		runErr = fmt.Errorf("could not start the %s agent: %w", r.agent.Name(), err)
	} else {
		runErr = sess.Run(t.ctx, session.Turn{Prompt: prompt, Model: model})
	}

	status := protocol.StatusCompleted
	switch cause := context.Cause(t.ctx); {
	case t.ctx.Err() != nil && errors.Is(cause, errRejected):
		status = protocol.StatusRejected
	case t.ctx.Err() != nil && errors.Is(cause, errStoreFailed):
		status, runErr = protocol.StatusError, cause // reported by copilot:error already
	case t.ctx.Err() != nil:
		status = protocol.StatusAborted
	case errors.Is(runErr, session.ErrRejected):
		status = protocol.StatusRejected
	case runErr != nil:
		status = protocol.StatusError
		r.log.Warn("relay: turn failed", "conversationId", conv.id, "err", runErr)
	}
	t.changes = r.snapshotAfter(conv, t)
	r.noteIgnored(context.WithoutCancel(t.ctx), conv, t)
	conv.finishTurn(t, status, runErr)
}

// session returns the conversation's agent session, opening it on first use.
// It waits for a close in progress (copilot:close) to finish first.
func (c *conversation) session(ctx context.Context, model string) (session.Session, error) {
	for {
		c.mu.Lock()
		if c.sess != nil {
			s := c.sess
			c.mu.Unlock()
			return s, nil
		}
		if ch := c.closing; ch != nil {
			c.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if model == "" {
			model = c.model
		}
		opts := session.OpenOptions{Model: model, Resume: c.fromStore || c.hadSession, WorkDir: c.workspace.Dir}
		h := &host{conv: c}
		c.mu.Unlock()

		// Open may take a while (a CLI starting); an abort meanwhile cancels
		// it. The session itself lives until Close, so its context is the
		// relay's, not the turn's.
		openCtx, cancelOpen := context.WithCancel(c.r.ctx)
		stop := context.AfterFunc(ctx, cancelOpen)
		s, err := c.r.agent.Open(openCtx, c.id, opts, h)
		stop()
		if err != nil {
			cancelOpen()
			return nil, err
		}
		h.cancelOpen = cancelOpen
		c.mu.Lock()
		c.sess, c.host, c.hadSession = s, h, true
		c.mu.Unlock()
		return s, nil
	}
}

// finishTurn closes a turn: open input requests are closed, the partial text
// of an aborted or rejected turn is kept as a copilot:message, a failure is
// reported as copilot:error, and copilot:idle ends the stream.
//
// A turn that is no longer the conversation's (a newer one started after
// a takeover closed this one) ends without a word: its end was told, and
// the conversation streams the newer turn, which an idle or a streaming
// false from this one would cut in two for its clients and open to a
// second send running beside it (TestStaleTurnEndLeavesNewerTurn).
func (c *conversation) finishTurn(t *turn, status string, runErr error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer close(t.done)
	t.settleStartLocked(c, false) // no waiter is left; a lost start was settled then
	c.closeInputsLocked(t, context.Canceled)
	c.r.streamsMu.Lock()
	delete(c.r.streamsRun, t)
	c.r.streamsMu.Unlock()
	if c.turn != t {
		c.r.log.Debug("relay: the end of a turn a newer one replaced is not told", "conversationId", c.id, "status", status)
		return
	}
	if status == protocol.StatusAborted || status == protocol.StatusRejected {
		for _, id := range t.partialOrder {
			if t.finished[id] {
				continue
			}
			m := protocol.Message{MessageID: id, Content: t.partial[id].String()}
			c.emitLocked(protocol.TypeMessage, &m.Header, &m)
		}
	}
	if status == protocol.StatusError && !c.failure.failed {
		c.emitErrorLocked(runErr.Error())
	}
	c.turn = nil
	if c.own.here {
		// A conversation this relay lost says what is stored of it
		// (applyStored): another relay's turn may stream there now.
		c.streaming = false
	}
	if ch := t.changes; ch != nil {
		c.emitLocked(protocol.TypeChanges, &ch.Header, ch)
	}
	idle := protocol.Idle{Status: status}
	if status == protocol.StatusAborted && errors.Is(context.Cause(t.ctx), errShutdown) {
		// Cut by the relay's own stop, not by a user: the message says so,
		// as the turn a crash left open is closed on restart.
		idle.Message = RestartedMessage
	}
	c.emitLocked(protocol.TypeIdle, &idle.Header, &idle)
	c.turnEndSeq = c.lastSeq // storefail.go: an idle lost with a failed write is replaced
}

// abortLocked cancels the running turn, if any, and closes its input
// requests (reason aborted). It reports whether a turn was running.
func (c *conversation) abortLocked(cause error) bool {
	t := c.turn
	if t == nil {
		return false
	}
	t.cancel(cause)
	c.closeInputsLocked(t, context.Canceled)
	return true
}

// abort cancels the running turn, as abortLocked does.
func (c *conversation) abort(cause error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.abortLocked(cause)
}

// streamStart is a running stream in the order streams started.
type streamStart struct {
	conv *conversation
	seq  uint64
}

// titleOf makes a conversation's title from its first prompt: the first
// non-blank line, at most titleLength characters.
func titleOf(prompt string) string {
	const titleLength = 60
	line := ""
	for l := range strings.SplitSeq(prompt, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			line = l
			break
		}
	}
	line = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, line)
	runes := []rune(line)
	if len(runes) <= titleLength {
		return line
	}
	return strings.TrimRightFunc(string(runes[:titleLength-1]), unicode.IsSpace) + "…"
}
