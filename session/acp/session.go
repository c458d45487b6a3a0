package acp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/pilotdesk/pilotdesk/internal/queue"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/backend"
)

// Session is one conversation's ACP session.
type Session struct {
	a              *Agent
	host           session.Host
	conversationID string
	log            *slog.Logger
	// cwd is the ACP session's folder: the conversation's
	// (session.OpenOptions.WorkDir), else the agent's. One agent process
	// serves sessions in many folders.
	cwd string

	// The pump runs what the connection's handlers queue, in order; it is
	// the only goroutine that calls Host.Emit while the session is open,
	// and the only one that touches st.
	queue    *workQueue
	pumpDone chan struct{}
	st       *stream

	// ctx lives until Close: the prompt request and permission decisions
	// outside a turn use it.
	ctx    context.Context
	cancel context.CancelFunc

	turns backend.Turns // one at a time, none once closed; a turn may re-attach the session

	mu      sync.Mutex
	proc    *process      // the process the session lives in
	id      sdk.SessionId // its ACP session id there
	loading bool          // session/load replays the history: not news
	updates int           // session/updates received, news or not (settle)
	turnCtx context.Context
	// turnStop ends the running turn with a cause (errFellBehind); nil
	// between turns.
	turnStop context.CancelCauseFunc
	usage    usageCounter
	modes    agentModes
	// lastUsed is when the session's last turn ended (or it opened), and
	// idle the timer that puts it to sleep (idle.go).
	lastUsed time.Time
	idle     *time.Timer
}

var _ session.Session = (*Session)(nil)

func newSession(a *Agent, conversationID, cwd string, host session.Host) *Session {
	ctx, cancel := context.WithCancel(context.Background())
	log := a.log.With("conversation", conversationID)
	s := &Session{
		a:              a,
		cwd:            cwd,
		host:           host,
		conversationID: conversationID,
		log:            log,
		queue:          newWorkQueue(),
		pumpDone:       make(chan struct{}),
		st:             newStream(host, log),
		ctx:            ctx,
		cancel:         cancel,
	}
	go s.queue.run(s.pumpDone)
	return s
}

// attach gives the session an ACP session in process p: the previous one
// (prev) loaded again where the agent can, else a new one.
func (s *Session) attach(ctx context.Context, p *process, prev sdk.SessionId) error {
	if prev != "" && s.a.unpark(s.conversationID, p, prev) {
		// Closed by the relay but still open in the agent, which has no
		// session/close: it is taken up again as it is.
		s.log.Info("acp: took up the conversation's session again, still open in the agent", "session", prev)
		return s.bind(p, prev, false)
	}
	lost := ""
	if prev != "" {
		err := s.reopen(ctx, p, prev)
		if err == nil {
			return nil
		}
		if dead := p.dead(); dead != nil {
			return dead
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The agent keeps the transcript's context no more; the
		// conversation goes on with a fresh agent session.
		s.log.Warn("acp: the agent cannot resume the conversation's session; starting a new one", "session", prev, "err", err)
		lost = err.Error()
	}
	res, err := p.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: s.cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		return s.failed(ctx, p, "session/new", err)
	}
	if err := s.bind(p, res.SessionId, false); err != nil {
		return err
	}
	s.setModes(res.Modes)
	if lost != "" {
		// Said in the transcript, where every front end reads it, once
		// per conversation: the reply will not know what came before.
		s.noteLater("lost-context", "the agent could not load this conversation's earlier session ("+lost+"), so it goes on in a new session and no longer knows what was said before.")
	}
	return nil
}

// noteLater puts a note of pilotdesk's in the transcript, in order with
// the session's events.
func (s *Session) noteLater(key, text string) {
	if err := s.queue.push(func() { s.st.note(key, text) }); err != nil {
		s.log.Warn("acp: a note could not be given", "note", key, "err", err)
	}
}

// reopen loads (session/load) or resumes (session/resume) an earlier ACP
// session, whichever the agent offers.
func (s *Session) reopen(ctx context.Context, p *process, id sdk.SessionId) error {
	caps := p.info.AgentCapabilities
	switch {
	case caps.LoadSession:
		// Registered, but loading: the history the agent replays before
		// it answers is the relay's already.
		if err := s.bind(p, id, true); err != nil {
			return err
		}
		res, err := p.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: s.cwd, McpServers: []sdk.McpServer{}})
		if err != nil && s.a.wasClosedIn(id, p) {
			// Closed here a moment ago: Codex answers session/close
			// before it lets the session go, and refuses to load it
			// until then ("already has a live local writer").
			for wait := 250 * time.Millisecond; err != nil && wait <= time.Second && p.alive(); wait *= 2 {
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
				if ctx.Err() != nil {
					break
				}
				res, err = p.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: s.cwd, McpServers: []sdk.McpServer{}})
			}
		}
		if err == nil {
			s.settle(ctx)
		}
		s.mu.Lock()
		s.loading = false
		if err != nil {
			s.proc, s.id = nil, ""
		}
		s.mu.Unlock()
		if err != nil {
			s.a.unregister(id, s)
			return fmt.Errorf("session/load: %s", rpcMessage(err))
		}
		s.log.Info("acp: loaded the conversation's session", "session", id)
		s.setModes(res.Modes)
		return nil
	case caps.SessionCapabilities.Resume != nil:
		res, err := p.conn.ResumeSession(ctx, sdk.ResumeSessionRequest{SessionId: id, Cwd: s.cwd, McpServers: []sdk.McpServer{}})
		if err != nil {
			return fmt.Errorf("session/resume: %s", rpcMessage(err))
		}
		s.log.Info("acp: resumed the conversation's session", "session", id)
		if err := s.bind(p, id, false); err != nil {
			return err
		}
		s.setModes(res.Modes)
		return nil
	default:
		return errors.New("the agent offers neither session/load nor session/resume")
	}
}

// Replay after session/load: an agent replays the session's history as
// updates, which are not news. Most send them before they answer the load;
// the Gemini CLI streams them after its answer, so the session goes on
// taking updates as replay until none came for settleQuiet (at most
// settleMax), before its next prompt can be sent.
const (
	settleQuiet = 150 * time.Millisecond
	settleMax   = 3 * time.Second
)

// settle waits until the agent stopped replaying the loaded session.
func (s *Session) settle(ctx context.Context) {
	deadline := time.Now().Add(settleMax)
	s.mu.Lock()
	last := s.updates
	s.mu.Unlock()
	t := time.NewTimer(settleQuiet)
	defer t.Stop()
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		n := s.updates
		s.mu.Unlock()
		if n == last {
			return
		}
		last = n
		t.Reset(settleQuiet)
	}
}

// bind makes id, in process p, the session's ACP session.
func (s *Session) bind(p *process, id sdk.SessionId, loading bool) error {
	if err := s.a.register(id, s); err != nil {
		return err
	}
	s.mu.Lock()
	if s.turns.Closed() {
		// Closed while a turn re-attached it: the agent must not route
		// to it any more.
		s.mu.Unlock()
		s.a.unregister(id, s)
		return errClosed
	}
	old := s.id
	s.proc, s.id, s.loading = p, id, loading
	s.usage.reset(p)
	s.mu.Unlock()
	if old != "" && old != id {
		s.a.unregister(old, s)
	}
	s.a.remember(s.conversationID, s.cwd, id)
	return nil
}

// failed words an error of a call to the agent: the process's death, the
// agent wanting a sign-in, or what the agent said.
func (s *Session) failed(ctx context.Context, p *process, method string, err error) error {
	if dead := p.dead(); dead != nil {
		return dead
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var re *sdk.RequestError
	if errors.As(err, &re) && re.Code == authRequiredCode {
		return fmt.Errorf("%w: %s answered %s with %q; %s", errNotSignedIn, p.agentName(), method, re.Message, authHint(p.info.AuthMethods))
	}
	return fmt.Errorf("acp: %s: %s", method, rpcMessage(err))
}

// live returns the process the session lives in and its ACP session id,
// starting the agent again and reloading the session after a crash.
func (s *Session) live(ctx context.Context) (*process, sdk.SessionId, error) {
	p, err := s.a.process(ctx)
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	same, asleep, id := s.proc == p, s.proc == nil, s.id
	s.mu.Unlock()
	if !same {
		if asleep {
			s.log.Info("acp: reopening the conversation's session, closed while idle", "session", id)
		} else {
			s.log.Info("acp: the agent was restarted; reopening the conversation's session", "previous", id)
		}
		if err := s.attach(ctx, p, id); err != nil {
			return nil, "", err
		}
		s.mu.Lock()
		id = s.id
		s.mu.Unlock()
	}
	return p, id, nil
}

// Run sends the prompt and waits for the agent's answer, the end of the
// turn. Cancelling ctx sends session/cancel, answers open permission
// requests "cancelled", waits (bounded) for the agent to end the turn, and
// returns ctx.Err().
func (s *Session) Run(ctx context.Context, t session.Turn) error {
	end, err := s.turns.Begin(errClosed)
	if err != nil {
		return err
	}
	defer end()
	defer s.used()
	p, id, err := s.live(ctx)
	if err != nil {
		return backend.TurnErr(ctx, err)
	}
	if t.Model != "" {
		s.log.Debug("acp: the agent's own configuration picks the model; the turn's model is not passed on", "model", t.Model)
	}
	s.followMode(ctx, p, id)

	tctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	s.mu.Lock()
	s.turnCtx, s.turnStop = tctx, stop
	s.mu.Unlock()
	res, aborted, err := s.prompt(tctx, p, id, t.Prompt)
	s.mu.Lock()
	s.turnCtx, s.turnStop = nil, nil
	usage := s.usage.turn(res.Usage, res.Meta)
	s.mu.Unlock()

	// Every update the agent sent before its answer is queued by now (the
	// SDK hands notifications over before the response): end the turn
	// after them.
	stoppedAtDenial := false
	s.sync(func() {
		// An agent that ends its turn itself (stopReason cancelled) right
		// after the relay denied a tool (Codex: its only rejection is
		// "abort") ended it as Plan intends: the turn is completed.
		stoppedAtDenial = err == nil && !aborted && res.StopReason == sdk.StopReasonCancelled && s.st.deniedTool
		if stoppedAtDenial {
			s.st.note("stops-at-denial", "this agent ends its turn when a tool call is denied, so in Plan mode it stops at the first tool it wanted to run; the denial is in the tool's row, and the agent hears of it with your next message.")
		}
		s.st.endTurn(aborted, usage)
		if res.Usage == nil && quotaUsage(res.Meta) == nil && err == nil && !aborted && res.StopReason == sdk.StopReasonEndTurn {
			s.st.unreported()
		}
	})
	if stoppedAtDenial {
		return nil
	}

	if ctx.Err() != nil {
		return ctx.Err()
	}
	if cause := context.Cause(tctx); errors.Is(cause, errFellBehind) {
		return cause
	}
	if err != nil {
		if dead := p.dead(); dead != nil {
			return dead
		}
		if s.ctx.Err() != nil {
			return errClosed
		}
		return fmt.Errorf("acp: the agent failed the turn: %s", rpcMessage(err))
	}
	return s.stopReason(res.StopReason)
}

// prompt sends session/prompt and waits for its answer. The request runs
// under the session's context, not the turn's: an abort is session/cancel,
// after which the agent still answers (stopReason cancelled), and the next
// turn must not see this one's tail.
func (s *Session) prompt(ctx context.Context, p *process, id sdk.SessionId, text string) (_ sdk.PromptResponse, aborted bool, _ error) {
	pctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	type result struct {
		res sdk.PromptResponse
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := p.conn.Prompt(pctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		return r.res, false, r.err
	case <-ctx.Done():
	}
	if err := p.conn.Cancel(context.Background(), sdk.CancelNotification{SessionId: id}); err != nil {
		s.log.Warn("acp: session/cancel could not be sent", "err", err)
	}
	t := time.NewTimer(s.a.opts.AbortTimeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.res, true, r.err
	case <-t.C:
		s.log.Warn("acp: the agent did not end the cancelled turn; no longer waiting", "waited", s.a.opts.AbortTimeout)
		cancel()
		r := <-done
		return r.res, true, r.err
	}
}

// stopReason maps how the agent ended a turn that was not aborted.
func (s *Session) stopReason(r sdk.StopReason) error {
	switch r {
	case sdk.StopReasonEndTurn:
		// Also after a denied tool: copilot and opencode end the turn
		// there, and the model sees the denial with the next prompt.
		return nil
	case sdk.StopReasonCancelled:
		return errors.New("acp: the agent cancelled the turn by itself")
	case sdk.StopReasonMaxTokens:
		return errors.New("acp: the agent stopped: the model reached its output token limit (max_tokens)")
	case sdk.StopReasonMaxTurnRequests:
		return errors.New("acp: the agent stopped: it reached its limit of model requests for one turn (max_turn_requests)")
	case sdk.StopReasonRefusal:
		return errors.New("acp: the agent stopped: the model refused to go on (refusal)")
	}
	s.log.Warn("acp: the agent ended the turn with an unknown stop reason; taking it as completed", "stopReason", r)
	return nil
}

// sync runs f on the pump after everything queued before it, and waits.
func (s *Session) sync(f func()) {
	done := make(chan struct{})
	if err := s.queue.pushWait(s.ctx, func() { f(); close(done) }); err != nil {
		return // closed: the session is going away
	}
	select {
	case <-done:
	case <-s.pumpDone:
	}
}

// onUpdate queues a session/update for the pump.
func (s *Session) onUpdate(p *process, u sdk.SessionUpdate) {
	s.mu.Lock()
	s.updates++
	ours := s.proc == p && !s.loading
	if u.CurrentModeUpdate != nil && s.proc == p {
		s.modes.current = u.CurrentModeUpdate.CurrentModeId
	}
	s.mu.Unlock()
	if ours {
		if err := s.queue.push(func() { s.st.update(u) }); errors.Is(err, queue.ErrFull) {
			s.fellBehind()
		}
	}
}

// fellBehind stops the running turn: its updates overflowed the work
// queue, and an update dropped in silence would leave the transcript wrong.
func (s *Session) fellBehind() {
	s.mu.Lock()
	stop := s.turnStop
	s.mu.Unlock()
	s.log.Error("acp: the relay fell behind the agent; stopping the turn", "queued", workQueueLen)
	if stop != nil {
		stop(errFellBehind)
	}
}

// turnOf is what a request of the agent's process p (a permission, a
// question) waits under: the running turn's context, or the session's
// between turns; ours is false when p is no longer the session's process
// (the request is answered with a cancel).
func (s *Session) turnOf(p *process) (turnCtx context.Context, ours bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	turnCtx = s.turnCtx
	if turnCtx == nil {
		turnCtx = s.ctx
	}
	return turnCtx, s.proc == p
}

// onPermission answers a session/request_permission. The pump decides (in
// order with the updates before it, so the tool's row comes first); this
// goroutine waits for that, for the turn's abort or for the connection.
func (s *Session) onPermission(ctx context.Context, p *process, req sdk.RequestPermissionRequest) sdk.RequestPermissionResponse {
	turnCtx, ours := s.turnOf(p)
	if !ours {
		return cancelledOutcome()
	}
	reply := make(chan sdk.RequestPermissionResponse, 1)
	if err := s.queue.push(func() { reply <- s.st.permission(turnCtx, req) }); err != nil {
		if errors.Is(err, queue.ErrFull) {
			s.fellBehind()
		}
		return cancelledOutcome()
	}
	select {
	case r := <-reply:
		if turnCtx.Err() == nil {
			return r
		}
	case <-ctx.Done():
	case <-turnCtx.Done():
	}
	// Aborted (ACP wants open requests answered "cancelled"), closed, or
	// the connection is gone.
	return cancelledOutcome()
}

// Close ends the ACP session (session/close where the agent offers it) and
// stops the session's goroutines. ACP reports no usage totals, so there is
// no Shutdown event; the relay sends its own.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.turns.Close() {
		s.mu.Unlock()
		return nil
	}
	p, id := s.proc, s.id
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()

	ctx, cancel := s.a.opts.CloseContext(ctx)
	defer cancel()
	var err error
	if p != nil && id != "" && p.alive() {
		if p.info.AgentCapabilities.SessionCapabilities.Close != nil {
			_, err = p.conn.CloseSession(ctx, sdk.CloseSessionRequest{SessionId: id})
			if err == nil {
				s.a.closedIn(id, p)
			}
		} else {
			// Nothing frees it in the agent: keep it for the next Open,
			// which takes it up again instead of loading it (Codex
			// refuses to load a session it still holds).
			s.a.park(s.conversationID, p, id)
		}
	}
	if id != "" {
		s.a.unregister(id, s)
	}
	s.a.mu.Lock()
	delete(s.a.asleep, s)
	s.a.mu.Unlock()
	s.stop()
	if err != nil && p.dead() == nil {
		return fmt.Errorf("acp: session/close: %s", rpcMessage(err))
	}
	return nil
}

// stop cancels what waits on the session and ends the pump after the work
// already queued.
func (s *Session) stop() {
	s.cancel()
	s.queue.close()
	<-s.pumpDone
}
