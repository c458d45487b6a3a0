package copilot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/queue"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/backend"
	"github.com/pilotdesk/pilotdesk/session/copilot/jsonrpc"
)

// Session is one conversation's CLI session.
type Session struct {
	a              *Agent
	host           session.Host
	conversationID string
	id             string // the CLI session id
	log            *slog.Logger
	// workDir is the session's workingDirectory: the conversation's
	// folder (session.OpenOptions.WorkDir), else the agent's. One CLI
	// serves sessions in many folders.
	workDir string

	queue    *queue.Queue[queued] // what the reader received, for the pump
	pumpDone chan struct{}
	// ctx lives until Close; permission decisions and questions outside a
	// turn use it.
	ctx     context.Context
	cancel  context.CancelFunc
	workers sync.WaitGroup // permission replies and questions in flight

	turns backend.Turns // one at a time, none once closed

	mu       sync.Mutex
	model    string                 // the session's model as the CLI last confirmed it
	proc     *process               // the CLI process this session lives in
	turn     *turn                  // the running turn, if any
	usage    map[string]*modelUsage // what assistant.usage reported, per model
	premium  float64
	shutdown chan struct{} // closed once the CLI reported session.shutdown
	shutOnce sync.Once

	// tools is owned by the pump goroutine: what each tool call is and
	// whether we denied it.
	tools map[string]toolCall
}

var _ session.Session = (*Session)(nil)

type toolCall struct {
	name   string
	args   json.RawMessage
	denied bool
}

type modelUsage struct {
	Requests struct {
		Count int64   `json:"count"`
		Cost  float64 `json:"cost"`
	} `json:"requests"`
	Usage struct {
		InputTokens      int64 `json:"inputTokens"`
		OutputTokens     int64 `json:"outputTokens"`
		CacheReadTokens  int64 `json:"cacheReadTokens"`
		CacheWriteTokens int64 `json:"cacheWriteTokens"`
	} `json:"usage"`
}

// turn is one running Run.
type turn struct {
	ctx  context.Context
	idle chan struct{} // closed by the pump at session.idle
	err  error         // the session.error of this turn; written before idle closes
}

// TurnError is a turn the CLI reported as failed (session.error).
type TurnError struct {
	Type    string // the CLI's errorType: authentication, quota, rate_limit, query, …
	Message string
	// Provider names the model and the endpoint the turn went to, with
	// your own model: the CLI's own message ("404 Not Found") does not.
	Provider string
}

func (e *TurnError) Error() string {
	msg := e.Message
	if e.Provider != "" {
		msg += " (" + e.Provider + ")"
	}
	if e.Type == "" {
		return "copilot: " + msg
	}
	return fmt.Sprintf("copilot (%s error): %s", e.Type, msg)
}

// providerName says which model at which endpoint a turn goes to with
// your own model, "" otherwise.
func (s *Session) providerName() string {
	o := s.a.opts
	if o.ProviderURL == "" {
		return ""
	}
	s.mu.Lock()
	model := s.model
	s.mu.Unlock()
	if model == "" {
		model = o.Model
	}
	if model == "" {
		model = "the CLI's default model"
	}
	return fmt.Sprintf("model %q at %s", model, o.ProviderURL)
}

// providerDialTimeout bounds the check that the provider answers at all.
const providerDialTimeout = 3 * time.Second

// checkProvider fails at once when the provider's address takes no
// connection: the CLI would retry it for half a minute, saying nothing.
func (s *Session) checkProvider(ctx context.Context) error {
	raw := s.a.opts.ProviderURL
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil // the CLI reports a bad URL in its own words
	}
	host := u.Host
	if u.Port() == "" {
		port := "443"
		if u.Scheme == "http" {
			port = "80"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	dctx, cancel := context.WithTimeout(ctx, providerDialTimeout)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(dctx, "tcp", host)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &TurnError{Type: "provider", Provider: s.providerName(),
			Message: fmt.Sprintf("the provider does not answer (%v): start it, or check the provider URL (Settings, or --provider-url)", err)}
	}
	c.Close()
	return nil
}

func newSession(a *Agent, conversationID, id, model, workDir string, host session.Host) *Session {
	ctx, cancel := context.WithCancel(context.Background())
	if workDir == "" {
		workDir = a.opts.WorkDir
	}
	s := &Session{
		a:              a,
		workDir:        workDir,
		host:           host,
		conversationID: conversationID,
		id:             id,
		log:            a.log.With("conversation", conversationID, "session", id),
		pumpDone:       make(chan struct{}),
		ctx:            ctx,
		cancel:         cancel,
		model:          model,
		usage:          make(map[string]*modelUsage),
		shutdown:       make(chan struct{}),
		tools:          make(map[string]toolCall),
		queue:          newEventQueue(),
	}
	go s.pump()
	return s
}

// config is what session.create and session.resume carry.
func (s *Session) config(model string) map[string]any {
	o := s.a.opts
	c := map[string]any{
		"sessionId":         s.id,
		"clientName":        "pilotdesk",
		"streaming":         true,
		"requestPermission": true,
		"requestUserInput":  true,
		// Nothing may be answered on the user's behalf: these prompts are
		// not enabled, so the CLI never sends them.
		"requestElicitation":    false,
		"requestExitPlanMode":   false,
		"requestAutoModeSwitch": false,
		"hooks":                 false,
	}
	if model != "" {
		c["model"] = model
	}
	if s.workDir != "" {
		c["workingDirectory"] = s.workDir
	}
	if o.ProviderURL != "" {
		p := map[string]any{"type": o.ProviderType, "baseUrl": o.ProviderURL}
		if o.ProviderKey != "" {
			p["apiKey"] = o.ProviderKey
		}
		c["provider"] = p
	}
	return c
}

// attach makes the session known to process p: session.create, or with
// resume session.resume, falling back to create when the CLI does not have
// the session (it keeps only sessions that had a turn). Note that create
// with the id of an existing session replaces it, so create is never the
// fallback for anything else.
func (s *Session) attach(ctx context.Context, p *process, resume bool) error {
	s.mu.Lock()
	model := s.model
	s.mu.Unlock()
	var res struct {
		ModelState struct {
			ModelID string `json:"modelId"`
		} `json:"modelState"`
	}
	method := "session.create"
	var err error
	if resume {
		method = "session.resume"
		err = p.conn.Call(ctx, method, s.config(model), &res)
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			s.log.Info("copilot: the CLI cannot resume the session; starting it afresh", "err", err)
			method = "session.create"
			err = p.conn.Call(ctx, method, s.config(model), &res)
		}
	} else {
		err = p.conn.Call(ctx, method, s.config(model), &res)
	}
	if err != nil {
		if errors.Is(err, jsonrpc.ErrClosed) {
			return fmt.Errorf("copilot: %s: %w", method, p.deathErr())
		}
		return fmt.Errorf("copilot: %s for conversation %s: %w", method, s.conversationID, err)
	}
	s.mu.Lock()
	s.proc = p
	if res.ModelState.ModelID != "" {
		s.model = res.ModelState.ModelID
	}
	s.mu.Unlock()
	return nil
}

// live returns the process the session lives in, starting the CLI and
// resuming the session when it died since.
func (s *Session) live(ctx context.Context) (*process, error) {
	p, err := s.a.process(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	same := s.proc == p
	s.mu.Unlock()
	if same {
		return p, nil
	}
	s.log.Info("copilot: resuming the session in a new CLI process")
	if err := s.attach(ctx, p, true); err != nil {
		return nil, err
	}
	return p, nil
}

// Run sends the prompt and waits for the CLI to go idle. Cancelling ctx
// aborts the turn (session.abort) and returns ctx.Err().
func (s *Session) Run(ctx context.Context, t session.Turn) error {
	end, err := s.turns.Begin(errClosed)
	if err != nil {
		return err
	}
	defer end()
	p, err := s.live(ctx)
	if err != nil {
		return backend.TurnErr(ctx, err)
	}
	if err := s.switchModel(ctx, p, t.Model); err != nil {
		return backend.TurnErr(ctx, err)
	}
	if err := s.checkProvider(ctx); err != nil {
		return err
	}

	tr := &turn{ctx: ctx, idle: make(chan struct{})}
	s.mu.Lock()
	s.turn = tr
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.turn == tr {
			s.turn = nil
		}
		s.mu.Unlock()
	}()

	params := map[string]any{"sessionId": s.id, "prompt": t.Prompt}
	if err := p.conn.Call(ctx, "session.send", params, nil); err != nil {
		switch {
		case ctx.Err() != nil:
			// The CLI may have taken the prompt already.
			s.abort(p, tr)
			return ctx.Err()
		case errors.Is(err, jsonrpc.ErrClosed):
			return p.deathErr()
		default:
			return fmt.Errorf("copilot: sending the prompt: %w", err)
		}
	}
	select {
	case <-tr.idle:
		return tr.err
	case <-p.proc.Done():
		return p.deathErr()
	case <-ctx.Done():
		s.abort(p, tr)
		return ctx.Err()
	case <-s.ctx.Done():
		return errClosed
	}
}

// switchModel asks the CLI for another model when the turn names one.
func (s *Session) switchModel(ctx context.Context, p *process, model string) error {
	s.mu.Lock()
	current := s.model
	s.mu.Unlock()
	if model == "" || model == current {
		return nil
	}
	var res struct {
		ModelID string `json:"modelId"`
	}
	if err := p.conn.Call(ctx, "session.model.switchTo", map[string]any{"sessionId": s.id, "modelId": model}, &res); err != nil {
		return fmt.Errorf("copilot: switching to model %q: %w", model, err)
	}
	s.mu.Lock()
	s.model = model
	s.mu.Unlock()
	return nil
}

// abort stops the running turn and waits (bounded) for the CLI to go idle,
// so the next turn does not see this one's tail.
func (s *Session) abort(p *process, tr *turn) {
	ctx, cancel := context.WithTimeout(context.Background(), s.a.opts.AbortTimeout)
	defer cancel()
	if err := p.conn.Call(ctx, "session.abort", map[string]any{"sessionId": s.id}, nil); err != nil {
		s.log.Warn("copilot: session.abort failed", "err", err)
		return
	}
	select {
	case <-tr.idle:
	case <-p.proc.Done():
	case <-ctx.Done():
		s.log.Warn("copilot: the CLI did not go idle after an abort", "waited", s.a.opts.AbortTimeout)
	}
}

// Close detaches the CLI session (the CLI then reports its usage with
// session.shutdown, passed on as a Shutdown event) and stops the session.
// When the CLI cannot report, a Shutdown built from the usage seen is sent.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.turns.Close() {
		s.mu.Unlock()
		return nil
	}
	p := s.proc
	s.mu.Unlock()

	ctx, cancel := s.a.opts.CloseContext(ctx)
	defer cancel()
	var detachErr error
	if p != nil && p.alive() {
		detachErr = p.conn.Call(ctx, "session.detach", map[string]any{"sessionId": s.id}, nil)
		if detachErr == nil {
			select {
			case <-s.shutdown:
			case <-p.proc.Done():
			case <-ctx.Done():
				s.log.Warn("copilot: no shutdown report after session.detach")
			}
		}
	}
	s.a.unregister(s)
	s.stop()

	select {
	case <-s.shutdown:
	default:
		s.host.Emit(s.localShutdown())
	}
	if detachErr != nil && !errors.Is(detachErr, jsonrpc.ErrClosed) {
		return fmt.Errorf("copilot: session.detach: %w", detachErr)
	}
	return nil
}

// stop ends the pump (after the events already queued) and waits for the
// goroutines the session started.
func (s *Session) stop() {
	s.queue.Close()
	<-s.pumpDone
	s.cancel()
	s.workers.Wait()
}

// localShutdown is the Shutdown report built from the usage this session
// saw, for when the CLI cannot give its own.
func (s *Session) localShutdown() session.Shutdown {
	s.mu.Lock()
	defer s.mu.Unlock()
	metrics, err := json.Marshal(s.usage)
	if err != nil {
		metrics = []byte("{}")
	}
	return session.Shutdown{TotalPremiumRequests: s.premium, ModelMetrics: metrics}
}

// turnCtx is the running turn's context, or the session's between turns.
func (s *Session) turnCtx() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil {
		return s.turn.ctx
	}
	return s.ctx
}

// eventQueueLen bounds the events and questions waiting for the pump. When
// the Host is slow (the relay's store, a slow relay) the queue fills and the
// connection's reader waits to push, so the CLI's writes block in turn:
// back-pressure reaches the agent instead of memory growing, and no event is
// dropped.
const eventQueueLen = 1024

func newEventQueue() *queue.Queue[queued] {
	return queue.New(queue.Options[queued]{MaxLen: eventQueueLen})
}

// pump delivers the session's events in order. It is the only goroutine
// that calls Host.Emit while the session is open.
func (s *Session) pump() {
	defer close(s.pumpDone)
	var items []queued
	for {
		var err error
		items, err = s.queue.PopAll(context.Background(), items)
		if err != nil {
			return // closed and drained
		}
		for _, it := range items {
			if it.input != nil {
				s.onInput(it.input)
				continue
			}
			s.onEvent(it.p, it.event)
		}
	}
}

// enqueue hands an event or a question to the pump, in arrival order. It
// runs on the connection's reader goroutine and waits while the queue is
// full. Once the session is closed a question is answered with an error.
func (s *Session) enqueue(it queued) {
	if err := s.queue.Push(s.ctx, it); err != nil {
		if it.input != nil {
			it.input.reply(nil, &jsonrpc.Error{Code: jsonrpc.CodeServerError, Message: "the conversation is closed; nobody can answer"})
		} else {
			s.log.Debug("copilot: event after the session closed dropped", "err", err)
		}
	}
}

type queued struct {
	p     *process
	event json.RawMessage
	input *inputRequest
}

// inputRequest is a userInput.request waiting for its turn in the queue.
type inputRequest struct {
	ctx    context.Context
	params json.RawMessage
	reply  jsonrpc.Replier
}

// onInput answers a userInput.request from Host.Ask, on a goroutine of its
// own so the events behind it keep flowing.
func (s *Session) onInput(in *inputRequest) {
	turnCtx := s.turnCtx()
	s.workers.Add(1)
	go func() {
		defer s.workers.Done()
		s.answer(turnCtx, in)
	}()
}

func (s *Session) answer(turnCtx context.Context, in *inputRequest) {
	var req struct {
		Question      string   `json:"question"`
		Choices       []string `json:"choices"`
		AllowFreeform *bool    `json:"allowFreeform"`
	}
	if err := json.Unmarshal(in.params, &req); err != nil {
		in.reply(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid userInput.request: " + err.Error()})
		return
	}
	if strings.TrimSpace(req.Question) == "" {
		in.reply(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "userInput.request has no question"})
		return
	}
	// The question ends with the connection, the session or the turn.
	ctx, cancel := context.WithCancel(in.ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	defer context.AfterFunc(turnCtx, cancel)()

	ans, err := s.host.Ask(ctx, session.InputRequest{
		Question:      req.Question,
		Choices:       req.Choices,
		AllowFreeform: req.AllowFreeform,
	})
	if err == nil && ans.Text == "" {
		err = errors.New("empty answer")
	}
	if err != nil {
		s.log.Info("copilot: question not answered", "err", err)
		in.reply(nil, &jsonrpc.Error{Code: jsonrpc.CodeServerError, Message: unanswered(err)})
		return
	}
	in.reply(map[string]any{"answer": ans.Text, "wasFreeform": ans.WasFreeform}, nil)
}

// unanswered says, for the model to read, why a question got no answer.
func unanswered(err error) string {
	switch {
	case errors.Is(err, session.ErrTimeout):
		return "the user did not answer in time"
	case errors.Is(err, session.ErrRejected):
		return "the user rejected the question"
	case errors.Is(err, session.ErrInvalidRequest):
		return "the question could not be shown to the user: " + err.Error()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "the user stopped the turn before answering"
	default:
		return "the user could not answer: " + err.Error()
	}
}

// permissionReplyTimeout bounds one handlePendingPermissionRequest call.
const permissionReplyTimeout = 30 * time.Second
