package acp

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/pilotdesk/pilotdesk/internal/agentproc"
)

// process is one running agent and its ACP connection.
type process struct {
	argv []string
	proc *agentproc.Process
	conn *sdk.ClientSideConnection
	log  *slog.Logger

	// What initialize returned; set before the process is shared.
	info sdk.InitializeResponse
}

// startWords words an agent that could not start.
var startWords = agentproc.StartWords{Who: "acp", NotFound: errAgentNotFound, NotExecutable: errNotExecutable,
	NotFoundFix: "install the agent or fix --acp-command", Setting: "fix --acp-command"}

// startProcess spawns the agent in a process group of its own (see
// agentproc), so that stopping it reaches what it started too.
func startProcess(argv []string, workDir string, env []string, grace time.Duration, client *router, log *slog.Logger) (*process, error) {
	path, err := exec.LookPath(argv[0])
	if agentproc.NotExecutable(err) {
		// A path (LookPath skips such a file on PATH): it is there.
		return nil, startWords.NotExecutableError(argv[0])
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %q (%v); install the agent or fix --acp-command", errAgentNotFound, argv[0], err)
	}
	env, unset := agentEnv(argv, env, os.Geteuid() == 0, os.Getenv)
	if len(unset) > 0 {
		log.Info("acp: the agent does not get these variables of the relay's environment", "unset", unset)
	}
	proc, err := agentproc.Start(agentproc.Config{
		Path:  path,
		Args:  argv[1:],
		Dir:   workDir,
		Env:   env,
		Unset: unset,
		Grace: grace,
		StderrLine: func(line []byte) {
			if line := bytes.TrimSpace(line); len(line) > 0 {
				log.Info("acp agent stderr", "line", string(line))
			}
		},
	})
	if err != nil {
		return nil, startWords.Error(path, err)
	}
	p := &process{argv: argv, proc: proc, log: log}
	// elicitReader hands elicitation/create to the router whole (elicit.go).
	p.conn = sdk.NewClientSideConnection(client, proc.Stdin(), newElicitReader(proc.Stdout(), &client.order))
	p.conn.SetLogger(log)
	proc.Watch(p.conn.Done(), func() error {
		<-p.conn.Done()
		return p.cause()
	})
	client.p.Store(p)
	return p, nil
}

// agentEnv fits the agent's environment (env, added to the relay's, whose
// variables getenv reads) around the agents' known bugs, returning what to
// add and which of the relay's variables to leave out.
//
// claude-agent-acp passes Claude Code --allow-dangerously-skip-permissions
// whenever IS_SANDBOX is set, to anything, and Claude Code, run as root,
// accepts that flag only with IS_SANDBOX=1, else it exits at once (and
// session/new fails with "Query closed before response received"). As root
// the adapter thus gets no IS_SANDBOX unless it is 1; the flag only skips
// Claude Code's own prompts, which pilotdesk answers anyway.
func agentEnv(argv, env []string, root bool, getenv func(string) string) (add, unset []string) {
	if !root || !strings.Contains(strings.Join(argv, " "), "claude-agent-acp") {
		return env, nil
	}
	value, set := getenv("IS_SANDBOX"), getenv("IS_SANDBOX") != ""
	for _, kv := range env {
		if name, v, _ := strings.Cut(kv, "="); name == "IS_SANDBOX" {
			value, set = v, true
		}
	}
	if !set || value == "1" {
		return env, nil
	}
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); name != "IS_SANDBOX" {
			add = append(add, kv)
		}
	}
	return add, []string{"IS_SANDBOX"}
}

// cause explains why the process ended.
func (p *process) cause() error {
	return p.proc.ExitError("acp: the agent (" + strings.Join(p.argv, " ") + ")")
}

// Agent is the agent's process, for the Keeper.
func (p *process) Agent() *agentproc.Process { return p.proc }

// stop ends the process: close stdin (the agents exit on EOF), wait, then
// signal the whole group, TERM and at last KILL.
func (p *process) stop() { p.proc.Stop() }

// alive reports whether the process can still take requests.
func (p *process) alive() bool { return p.proc.Alive() }

// dead returns the reason the connection is gone, or nil while it lives.
// It waits for the teardown, so the reason includes the exit status.
func (p *process) dead() error { return p.proc.Dead() }
