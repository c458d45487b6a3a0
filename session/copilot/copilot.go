// Package copilot is the GitHub Copilot CLI backend of session.Agent.
//
// It runs one `copilot --headless --no-auto-update --stdio` process per
// Agent and speaks the CLI's SDK protocol to it: JSON-RPC 2.0 with LSP-style
// framing (package jsonrpc), protocol version 3. Every conversation is one
// CLI session. The facts it relies on are in docs/copilot-cli.md.
//
// The relay decides, the CLI asks: every permission.requested event is
// answered from Host.Permission at that moment (approve-once or reject), so
// plan/act switches apply mid-stream without touching the CLI session, which
// always stays in the CLI's "interactive" mode. ask_user questions go to
// Host.Ask; nothing is ever answered on a person's behalf. The ask_user
// tool call itself is reported like any tool (ToolStart, then ToolEnd whose
// result is the CLI's "User selected: …"), so the transcript keeps the
// question's outcome; it never asks permission.
//
// The CLI process starts at the first Open. When it dies, running turns fail
// and the next turn starts a fresh process and resumes the session from the
// CLI's own store (session.resume), so the conversation keeps its context.
package copilot

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/internal/agentproc"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/backend"
	"github.com/pilotdesk/pilotdesk/session/copilot/jsonrpc"
)

// The session package's errors, worded for the Copilot CLI.
var (
	errCLINotFound      = fmt.Errorf("GitHub Copilot CLI %w", session.ErrAgentNotFound)
	errCLINotExecutable = fmt.Errorf("GitHub Copilot CLI %w", session.ErrAgentNotExecutable)
	errNotSignedIn      = fmt.Errorf("GitHub Copilot CLI %w", session.ErrNotSignedIn)
	errProtocolMismatch = fmt.Errorf("GitHub Copilot CLI %w", session.ErrProtocolMismatch)
	errClosed           = fmt.Errorf("copilot: %w", session.ErrClosed)
)

// Options configures the backend.
type Options struct {
	// Path is the CLI executable; empty means `copilot` on PATH. A path
	// ending in .js (the npm loader) is run with node.
	Path string
	// Model is the model of new sessions; empty: the CLI's default.
	Model string
	// WorkDir is where the agent works (its tools read and write there);
	// empty: the current directory.
	WorkDir string
	// ProviderURL, when set, points the CLI at an OpenAI-compatible (or
	// azure, anthropic) endpoint instead of GitHub's models (BYOK); no
	// GitHub sign-in is needed then.
	ProviderURL  string
	ProviderType string // openai (default), azure or anthropic
	ProviderKey  string
	Logger       *slog.Logger
	// Env is added to the CLI's environment ("KEY=value"; later entries win),
	// for example COPILOT_HOME.
	Env []string

	// Limits: StartTimeout bounds starting the CLI and the handshake (the
	// first run of a fresh install unpacks ~235 MB), default 60s;
	// AbortTimeout, waiting for the CLI to go idle after an abort;
	// CloseTimeout, session.detach and waiting for its shutdown report.
	backend.Limits
	// MaxFrameSize bounds one message from the CLI; larger ones are skipped.
	// Default jsonrpc.DefaultMaxFrameSize.
	MaxFrameSize int
}

func (o Options) withDefaults() Options {
	o.Limits = o.Limits.WithDefaults(60 * time.Second)
	if o.ProviderType == "" {
		o.ProviderType = "openai"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o Options) validate() error {
	switch o.ProviderType {
	case "", "openai", "azure", "anthropic":
	default:
		return fmt.Errorf("copilot: provider type %q: want openai, azure or anthropic", o.ProviderType)
	}
	return nil
}

// Agent is the Copilot backend. It is safe for concurrent use.
type Agent struct {
	opts Options
	log  *slog.Logger

	// procs keeps the CLI process, started at the first Open and again
	// after it died; closing it closes the Agent.
	procs *agentproc.Keeper[*process]
	gen   int // the CLI processes started; owned by start (one at a time)

	mu       sync.Mutex          // guards sessions; taken before the keeper's
	sessions map[string]*Session // open sessions by CLI session id
}

var _ session.Agent = (*Agent)(nil)

// New returns a backend. It checks the options but starts nothing: the CLI
// starts at the first Open.
func New(opts Options) (*Agent, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if opts.WorkDir != "" {
		abs, err := filepath.Abs(opts.WorkDir)
		if err != nil {
			return nil, fmt.Errorf("copilot: work dir %q: %w", opts.WorkDir, err)
		}
		opts.WorkDir = abs
	}
	if opts.ProviderURL != "" && opts.Model == "" {
		// With a provider and no model the CLI asks the endpoint for its
		// own default (claude-sonnet-4), which a local server rarely has.
		opts.Logger.Warn("copilot: a provider URL without a model; pass --model with a model the endpoint serves")
	}
	a := &Agent{
		opts:     opts,
		log:      opts.Logger,
		sessions: make(map[string]*Session),
	}
	a.procs = agentproc.NewKeeper(a.start, errClosed)
	return a, nil
}

// Name is "copilot".
func (a *Agent) Name() string { return "copilot" }

// Label names the backend for people (session.Labeler).
func (a *Agent) Label() string { return "Copilot CLI" }

// Probe checks that the CLI can serve turns: it is found, it speaks our
// protocol, and it is signed in to GitHub or a provider URL is set. It starts
// the CLI and stops it again. Each error says what to do.
func Probe(ctx context.Context, opts Options) error {
	a, err := Start(ctx, opts)
	if err != nil {
		return err
	}
	return a.Close()
}

// Start makes the agent and checks, as Probe does, that its CLI can serve
// turns, keeping the CLI it started for them: the first prompt then does not
// pay for a second start. `--agent auto` uses it to pick a backend.
func Start(ctx context.Context, opts Options) (*Agent, error) {
	a, err := New(opts)
	if err != nil {
		return nil, err
	}
	if err := a.check(ctx); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// check starts the agent's CLI and asks whether it can serve turns.
func (a *Agent) check(ctx context.Context) error {
	p, err := a.process(ctx)
	if err != nil {
		return err
	}
	if a.opts.ProviderURL != "" {
		return nil
	}
	var status struct {
		IsAuthenticated bool   `json:"isAuthenticated"`
		StatusMessage   string `json:"statusMessage"`
		Login           string `json:"login"`
	}
	cctx, cancel := context.WithTimeout(ctx, a.opts.StartTimeout)
	defer cancel()
	if err := p.conn.Call(cctx, "auth.getStatus", nil, &status); err != nil {
		return fmt.Errorf("copilot: asking the CLI for its sign-in status: %w", err)
	}
	if !status.IsAuthenticated {
		msg := cmp.Or(status.StatusMessage, "not authenticated")
		return fmt.Errorf("%w (%s): run `copilot` and type /login, or set a GitHub token in COPILOT_GITHUB_TOKEN, or use --provider-url to bring your own model", errNotSignedIn, msg)
	}
	return nil
}

// process returns the running CLI, starting one when there is none.
func (a *Agent) process(ctx context.Context) (*process, error) { return a.procs.Get(ctx) }

// start spawns a CLI and performs the handshake; previous is the CLI that
// died, nil on the first start.
func (a *Agent) start(ctx context.Context, previous *process) (*process, error) {
	a.gen++
	gen := a.gen
	if previous != nil {
		a.log.Info("copilot: restarting the CLI", "previous", previous.proc.Err())
	}
	cfg := processConfig{
		path:    a.opts.Path,
		workDir: a.opts.WorkDir,
		env:     a.opts.Env,
		grace:   a.opts.StopGrace,
		log:     a.log,
		conn:    jsonrpc.Options{MaxFrameSize: a.opts.MaxFrameSize, Logger: a.log},
		handler: func(p *process) jsonrpc.Handler { return &router{a: a, p: p} },
	}
	p, err := startProcess(gen, cfg)
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, a.opts.StartTimeout)
	defer cancel()
	if err := a.handshake(hctx, p); err != nil {
		p.stop()
		return nil, err
	}
	a.log.Info("copilot: CLI started", "path", p.path, "version", p.version, "pid", p.proc.Pid())
	return p, nil
}

// handshake checks the CLI's protocol version: `connect`, or `ping` from a
// CLI too old to know connect.
func (a *Agent) handshake(ctx context.Context, p *process) error {
	var res struct {
		ProtocolVersion *int   `json:"protocolVersion"`
		Version         string `json:"version"`
	}
	err := p.conn.Call(ctx, "connect", nil, &res)
	if jsonrpc.IsMethodNotFound(err) {
		err = p.conn.Call(ctx, "ping", nil, &res)
	}
	if err != nil {
		if errors.Is(err, jsonrpc.ErrClosed) {
			return fmt.Errorf("copilot: the CLI at %s did not complete the handshake: %w", p.path, p.proc.Wait())
		}
		return fmt.Errorf("copilot: handshake with the CLI at %s: %w", p.path, err)
	}
	if res.ProtocolVersion == nil {
		return fmt.Errorf("%w: the CLI at %s did not report a protocol version; pilotdesk speaks version %d", errProtocolMismatch, p.path, ProtocolVersion)
	}
	if *res.ProtocolVersion != ProtocolVersion {
		return fmt.Errorf("%w: the CLI at %s (version %s) speaks protocol version %d, pilotdesk speaks version %d; install a matching CLI (npm install -g @github/copilot@1.0.102)",
			errProtocolMismatch, p.path, cmp.Or(res.Version, "unknown"), *res.ProtocolVersion, ProtocolVersion)
	}
	p.version = res.Version
	return nil
}

// Open starts (or, with opts.Resume, resumes) the CLI session of a
// conversation. The CLI session id is derived from the conversation id, so a
// relay that restarts finds the same CLI session again.
func (a *Agent) Open(ctx context.Context, conversationID string, opts session.OpenOptions, host session.Host) (session.Session, error) {
	if host == nil {
		return nil, errors.New("copilot: Open needs a Host")
	}
	model := cmp.Or(opts.Model, a.opts.Model)
	s := newSession(a, conversationID, sessionID(conversationID), model, opts.WorkDir, host)
	// Register before the CLI hears of the session: its first events arrive
	// before the answer to session.create.
	if err := a.register(s); err != nil {
		s.stop()
		return nil, err
	}
	p, err := a.process(ctx)
	if err == nil {
		err = s.attach(ctx, p, opts.Resume)
	}
	if err != nil {
		a.unregister(s)
		s.stop()
		return nil, err
	}
	return s, nil
}

// sessionNamespace makes CLI session ids out of conversation ids.
var sessionNamespace = uuid.MustParse("6f1c6a52-0f4e-4b63-9a43-5b6f2bd2c1e7")

// sessionID is the CLI session id of a conversation: a UUID derived from the
// conversation id, so the same conversation always finds its CLI session.
func sessionID(conversationID string) string {
	return uuid.NewSHA1(sessionNamespace, []byte(conversationID)).String()
}

func (a *Agent) register(s *Session) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.procs.Closed() {
		return errClosed
	}
	if _, ok := a.sessions[s.id]; ok {
		return fmt.Errorf("copilot: conversation %s is already open", s.conversationID)
	}
	a.sessions[s.id] = s
	return nil
}

func (a *Agent) unregister(s *Session) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sessions[s.id] == s {
		delete(a.sessions, s.id)
	}
}

func (a *Agent) lookup(id string) *Session {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

// Close ends every open session (each reports its Shutdown) and stops the
// CLI: stdin closed, then SIGTERM and SIGKILL to its process group.
func (a *Agent) Close() error {
	a.mu.Lock()
	if !a.procs.Close() {
		a.mu.Unlock()
		return nil
	}
	open := make([]*Session, 0, len(a.sessions))
	for _, s := range a.sessions {
		open = append(open, s)
	}
	a.mu.Unlock()

	backend.CloseAll(open, func(s *Session, err error) {
		a.log.Warn("copilot: closing a session", "conversation", s.conversationID, "err", err)
	})

	// Wait for a start in progress, then stop whatever runs.
	if a.procs.Stop() {
		a.log.Info("copilot: CLI stopped")
	}
	return nil
}

// router routes what one CLI process sends to the sessions.
type router struct {
	a *Agent
	p *process
}

func (r *router) Notification(method string, params json.RawMessage) {
	<-r.p.ready
	if method != "session.event" {
		return // session.lifecycle, host.event, telemetry: not ours to show
	}
	var n struct {
		SessionID string          `json:"sessionId"`
		Event     json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(params, &n); err != nil || n.SessionID == "" {
		r.a.log.Warn("copilot: ignored a malformed session.event", "err", err)
		return
	}
	s := r.a.lookup(n.SessionID)
	if s == nil {
		r.a.log.Debug("copilot: event for a session that is not open", "session", n.SessionID)
		return
	}
	s.enqueue(queued{p: r.p, event: n.Event})
}

func (r *router) Request(ctx context.Context, method string, params json.RawMessage, reply jsonrpc.Replier) {
	<-r.p.ready
	if method != "userInput.request" {
		// Plan-exit, elicitation, hooks and the like are never enabled; an
		// unexpected one is refused rather than answered for the user.
		r.a.log.Warn("copilot: refused an unexpected request from the CLI", "method", method)
		reply(nil, jsonrpc.ErrMethodNotFound)
		return
	}
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		reply(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid userInput.request: " + err.Error()})
		return
	}
	s := r.a.lookup(p.SessionID)
	if s == nil {
		reply(nil, &jsonrpc.Error{Code: jsonrpc.CodeServerError, Message: "the conversation is closed; nobody can answer"})
		return
	}
	// Queued behind the events that came before it, so the question reaches
	// the user after the text that leads up to it.
	s.enqueue(queued{p: r.p, input: &inputRequest{ctx: ctx, params: params, reply: reply}})
}
