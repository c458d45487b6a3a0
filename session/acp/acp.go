// Package acp is the Agent Client Protocol backend of session.Agent: any ACP
// agent (`copilot --acp`, `opencode acp`, `gemini --acp`, `goose acp`,
// `claude-agent-acp`, codex-acp, …) started from a command line and driven
// over newline-delimited JSON-RPC on its stdio with github.com/coder/acp-go-sdk.
// docs/acp.md says what it relies on of the protocol and of the agents.
//
// One agent process serves the whole relay, and each conversation is one ACP
// session in it (session/new with the work dir). ACP is built for that: every
// request names its session, and the agents tried (Copilot, opencode,
// claude-agent-acp) run many sessions in one process. None needs a process of
// its own per conversation: what differs between processes is the
// environment (where agents take their model configuration from), and that
// is the relay's for every conversation alike. One process also means one
// start-up per relay, which matters for agents that take seconds to start.
//
// The relay decides, the agent asks: every session/request_permission is
// answered from Host.Permission at that moment, plan with the agent's
// reject-once option and act with its allow-once option. Never allow-always:
// after it the agent stops asking, and a later switch to plan could not deny.
// The agent's own modes are left alone. An agent that offers no reject
// option, or runs a tool that changes things without asking, is reported once
// per conversation as a note in the transcript.
//
// When the process dies, running turns fail with the reason (exit status and
// the end of its stderr) and the next turn starts a new process and loads
// the conversation's ACP session again (session/load, or session/resume,
// where the agent offers it), so the agent keeps its context. Closing the
// Agent stops the process and its whole process group.
package acp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/pilotdesk/pilotdesk/internal/agentproc"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/backend"
)

// The session package's errors, worded for an ACP agent.
var (
	errAgentNotFound    = fmt.Errorf("ACP agent %w", session.ErrAgentNotFound)
	errNotExecutable    = fmt.Errorf("ACP agent %w", session.ErrAgentNotExecutable)
	errNotSignedIn      = fmt.Errorf("the ACP agent %w", session.ErrNotSignedIn)
	errProtocolMismatch = fmt.Errorf("ACP %w", session.ErrProtocolMismatch)
	errClosed           = fmt.Errorf("acp: %w", session.ErrClosed)
)

// Options configures the backend.
type Options struct {
	// Command is the agent's command line, split by SplitCommand, such as
	// "copilot --acp" or "opencode acp". Required.
	Command string
	// WorkDir is where the agent runs and the cwd of every ACP session;
	// empty: the current directory.
	WorkDir string
	// Env is added to the relay's environment for the agent ("KEY=value";
	// later entries win). Agents take their model configuration from it.
	Env    []string
	Logger *slog.Logger
	// SessionMap is the file where each conversation's ACP session id is
	// kept, so that a restarted relay resumes it; empty: in memory only.
	SessionMap string
	// ClientVersion is what pilotdesk reports itself as in initialize.
	ClientVersion string

	// Limits: StartTimeout bounds starting the agent and initialize
	// (opencode takes seconds on a fresh home, copilot unpacks itself on
	// its first run), default 2m; CloseTimeout bounds session/close.
	backend.Limits

	// IdleClose closes the agent session of a conversation left idle this
	// long (session/close), and the next turn loads it again
	// (session/load): Claude Code keeps a process of 200+ MB per open
	// session. Only for agents that offer both; the conversation sees
	// nothing. Default 10 minutes; negative: never.
	IdleClose time.Duration
	// MaxOpen bounds the agent sessions open at once: past it the least
	// recently used idle one is closed the same way. Default 6; negative:
	// no bound.
	MaxOpen int
}

func (o Options) withDefaults() (Options, error) {
	o.Limits = o.Limits.WithDefaults(2 * time.Minute)
	if o.IdleClose == 0 {
		o.IdleClose = DefaultIdleClose
	}
	if o.MaxOpen == 0 {
		o.MaxOpen = DefaultMaxOpen
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "dev"
	}
	if o.WorkDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return o, fmt.Errorf("acp: the current directory: %w", err)
		}
		o.WorkDir = wd
	}
	abs, err := filepath.Abs(o.WorkDir)
	if err != nil {
		return o, fmt.Errorf("acp: work dir %q: %w", o.WorkDir, err)
	}
	o.WorkDir = abs // ACP wants an absolute cwd
	return o, nil
}

// Agent is the ACP backend. It is safe for concurrent use.
type Agent struct {
	opts  Options
	argv  []string
	log   *slog.Logger
	store *sessionStore
	// procs keeps the agent process, started at the first Open (or Probe)
	// and again after it died; closing it closes the Agent.
	procs *agentproc.Keeper[*process]

	mu       sync.Mutex                 // guards what follows; taken before the keeper's
	sessions map[sdk.SessionId]*Session // open sessions by ACP session id
	// parked: sessions the relay closed in an agent without session/close,
	// by conversation, taken up again by the conversation's next Open.
	parked map[string]parkedSession
	// closedHere: sessions closed (session/close) in the process, which
	// Codex finishes after it answers: a load soon after is tried again.
	closedHere map[sdk.SessionId]*process
	// asleep: sessions whose agent session was closed while idle (idle.go);
	// Close ends them too.
	asleep map[*Session]bool
}

// parkedSession is an agent session still open in process p.
type parkedSession struct {
	p  *process
	id sdk.SessionId
}

var _ session.Agent = (*Agent)(nil)

// New checks the options and returns a backend. It starts nothing: the agent
// starts at the first Open (Probe starts it up front).
func New(opts Options) (*Agent, error) {
	argv, err := SplitCommand(opts.Command)
	if err != nil {
		return nil, fmt.Errorf("acp: --acp-command: %w", err)
	}
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	store, err := openStore(opts.SessionMap)
	if err != nil {
		return nil, err
	}
	a := &Agent{
		opts:       opts,
		argv:       argv,
		log:        opts.Logger,
		store:      store,
		sessions:   make(map[sdk.SessionId]*Session),
		parked:     make(map[string]parkedSession),
		closedHere: make(map[sdk.SessionId]*process),
		asleep:     make(map[*Session]bool),
	}
	a.procs = agentproc.NewKeeper(a.start, errClosed)
	return a, nil
}

// Name is "acp".
func (a *Agent) Name() string { return "acp" }

// Label names the agent for people: its own title (else name) from
// initialize once it has started ("Claude Agent", "OpenCode"), else its
// command's, marked as an
// ACP agent ("OpenCode (ACP)"), so that `copilot --acp` is told from the
// Copilot CLI backend.
func (a *Agent) Label() string {
	p := a.procs.Current()
	name := filepath.Base(a.argv[0])
	if p != nil {
		if n := p.displayName(); n != "" {
			name = n
		}
	}
	return name + " (ACP)"
}

// Probe starts the agent and initializes it, so that a missing or broken
// agent is reported when the relay starts rather than at the first prompt.
// The process keeps running for the first conversation.
func (a *Agent) Probe(ctx context.Context) error {
	_, err := a.process(ctx)
	return err
}

// process returns the running agent, starting one when there is none.
func (a *Agent) process(ctx context.Context) (*process, error) { return a.procs.Get(ctx) }

// start spawns the agent and initializes the connection; previous is the
// agent that died, nil on the first start.
func (a *Agent) start(ctx context.Context, previous *process) (*process, error) {
	if previous != nil {
		a.log.Info("acp: restarting the agent", "previous", previous.dead())
	}
	p, err := startProcess(a.argv, a.opts.WorkDir, a.opts.Env, a.opts.StopGrace, &router{a: a}, a.log)
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, a.opts.StartTimeout)
	defer cancel()
	info, err := p.conn.Initialize(ictx, sdk.InitializeRequest{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		// No fs and no terminal: the agent then runs its own tools and
		// asks permission for them, instead of asking us to run them.
		// Elicitation in form mode: the agent's questions go to the
		// relay's input bridge (elicit.go); no URL mode, which would send
		// the user to a web page of the agent's.
		ClientCapabilities: sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{}, Terminal: false,
			Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.ElicitationFormCapabilities{}}},
		ClientInfo: &sdk.Implementation{Name: "pilotdesk", Version: a.opts.ClientVersion},
	})
	if err == nil && info.ProtocolVersion != sdk.ProtocolVersionNumber {
		err = fmt.Errorf("%w: the agent speaks ACP version %d, pilotdesk speaks %d", errProtocolMismatch, info.ProtocolVersion, sdk.ProtocolVersionNumber)
	}
	if err != nil {
		if dead := p.dead(); dead != nil {
			err = dead
		} else if ictx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("acp: the agent (%s) did not answer initialize within %v", a.opts.Command, a.opts.StartTimeout)
		}
		p.stop()
		return nil, fmt.Errorf("acp: starting the agent: %w", err)
	}
	p.info = info
	name, version := "unknown", ""
	if info.AgentInfo != nil {
		name, version = info.AgentInfo.Name, info.AgentInfo.Version
	}
	a.log.Info("acp: agent started", "command", a.opts.Command, "agent", name, "version", version,
		"pid", p.proc.Pid(), "loadSession", info.AgentCapabilities.LoadSession)
	return p, nil
}

// Open starts the conversation's ACP session, or with opts.Resume loads the
// one it had (when the agent can). OpenOptions.Model is not passed on: ACP
// has no stable way to choose a model, so the agent's own configuration
// decides.
func (a *Agent) Open(ctx context.Context, conversationID string, opts session.OpenOptions, host session.Host) (session.Session, error) {
	if host == nil {
		return nil, errors.New("acp: Open needs a Host")
	}
	cwd := cmp.Or(opts.WorkDir, a.opts.WorkDir)
	s := newSession(a, conversationID, cwd, host)
	var prev sdk.SessionId
	if opts.Resume {
		// A session made in another folder is not the conversation's.
		if id, ok := a.store.get(conversationID, a.opts.Command, cwd); ok {
			prev = sdk.SessionId(id)
		}
	}
	p, err := a.process(ctx)
	if err == nil {
		err = s.attach(ctx, p, prev)
	}
	if err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// register routes the ACP session id's traffic to s.
func (a *Agent) register(id sdk.SessionId, s *Session) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.procs.Closed() {
		return errClosed
	}
	if other, ok := a.sessions[id]; ok && other != s {
		return fmt.Errorf("acp: the agent's session %s is already open for conversation %s", id, other.conversationID)
	}
	a.sessions[id] = s
	delete(a.asleep, s)
	return nil
}

func (a *Agent) unregister(id sdk.SessionId, s *Session) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sessions[id] == s {
		delete(a.sessions, id)
	}
}

func (a *Agent) lookup(id sdk.SessionId) *Session {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

// park keeps the conversation's session, still open in p, for its next
// Open.
func (a *Agent) park(conversationID string, p *process, id sdk.SessionId) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.parked[conversationID] = parkedSession{p: p, id: id}
}

// unpark reports whether the conversation's session id is parked in p,
// which is alive, and takes it.
func (a *Agent) unpark(conversationID string, p *process, id sdk.SessionId) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	ps, ok := a.parked[conversationID]
	delete(a.parked, conversationID)
	return ok && ps.p == p && ps.id == id && p.alive()
}

// closedIn records that the session was closed in p; wasClosedIn reports
// it, once.
func (a *Agent) closedIn(id sdk.SessionId, p *process) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closedHere[id] = p
}

func (a *Agent) wasClosedIn(id sdk.SessionId, p *process) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	q, ok := a.closedHere[id]
	delete(a.closedHere, id)
	return ok && q == p
}

// remember records the conversation's ACP session for a later resume.
func (a *Agent) remember(conversationID, cwd string, id sdk.SessionId) {
	e := storedSession{SessionID: string(id), Command: a.opts.Command, Cwd: cwd}
	if err := a.store.put(conversationID, e); err != nil {
		a.log.Warn("acp: the conversation could not be resumed after a restart", "conversation", conversationID, "err", err)
	}
}

// Close ends every open session and stops the agent: stdin closed, then
// SIGTERM and SIGKILL to its process group.
func (a *Agent) Close() error {
	a.mu.Lock()
	if !a.procs.Close() {
		a.mu.Unlock()
		return nil
	}
	open := make(map[*Session]bool, len(a.sessions)+len(a.asleep))
	for _, s := range a.sessions {
		open[s] = true
	}
	for s := range a.asleep {
		open[s] = true
	}
	a.mu.Unlock()

	backend.CloseAll(slices.Collect(maps.Keys(open)), func(s *Session, err error) {
		a.log.Warn("acp: closing a session", "conversation", s.conversationID, "err", err)
	})

	// Wait for a start in progress, then stop whatever runs.
	if a.procs.Stop() {
		a.log.Info("acp: agent stopped", "command", a.opts.Command)
	}
	return nil
}

// displayName is the agent's name for people from initialize: its title
// ("Claude Agent", "Gemini CLI", "Codex"), else its name
// ("@zed-industries/claude-agent-acp"); "" when it gave neither.
func (p *process) displayName() string {
	info := p.info.AgentInfo
	if info == nil {
		return ""
	}
	if info.Title != nil && strings.TrimSpace(*info.Title) != "" {
		return strings.TrimSpace(*info.Title)
	}
	return strings.TrimSpace(info.Name)
}

// agentName names the agent for messages: its own name, else the command.
func (p *process) agentName() string {
	if n := p.displayName(); n != "" {
		return n
	}
	return strings.Join(p.argv, " ")
}
