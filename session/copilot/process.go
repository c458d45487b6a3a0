package copilot

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/agentproc"
	"github.com/pilotdesk/pilotdesk/session/copilot/jsonrpc"
)

// ProtocolVersion is the SDK protocol version this backend speaks. The
// Copilot CLI reports its own in the connect handshake.
const ProtocolVersion = 3

// cliArgs switch the CLI into its SDK server mode on stdio.
var cliArgs = []string{"--headless", "--no-auto-update", "--stdio"}

// installHint tells a person how to get the CLI.
const installHint = "install it with `npm install -g @github/copilot` (Node.js 22 or newer), or pass its path with --copilot-path"

// startWords words a CLI that could not start.
var startWords = agentproc.StartWords{Who: "copilot", NotFound: errCLINotFound, NotExecutable: errCLINotExecutable,
	NotFoundFix: installHint, Setting: "pass another path with --copilot-path"}

// command resolves the executable to run: the configured path, else
// "copilot" on PATH; a .js path (the npm loader) runs with node.
func command(path string) (name string, args []string, err error) {
	if path == "" {
		found, err := exec.LookPath("copilot")
		if err != nil {
			return "", nil, fmt.Errorf("%w: no `copilot` on PATH; %s", errCLINotFound, installHint)
		}
		path = found
	} else if !strings.ContainsRune(path, filepath.Separator) && !strings.ContainsRune(path, '/') {
		found, err := exec.LookPath(path)
		if err != nil {
			return "", nil, fmt.Errorf("%w: no %q on PATH; %s", errCLINotFound, path, installHint)
		}
		path = found
	} else {
		info, err := os.Stat(path)
		if err != nil {
			return "", nil, fmt.Errorf("%w: %s does not exist; %s", errCLINotFound, path, installHint)
		}
		if info.IsDir() {
			return "", nil, fmt.Errorf("%w: %s is a directory, not the copilot executable; %s", errCLINotFound, path, installHint)
		}
	}
	if strings.HasSuffix(path, ".js") {
		node, err := exec.LookPath("node")
		if err != nil {
			return "", nil, fmt.Errorf("%w: %s is a Node.js script but `node` is not on PATH", errCLINotFound, path)
		}
		return node, append([]string{path}, cliArgs...), nil
	}
	return path, append([]string(nil), cliArgs...), nil
}

// process is one running CLI and its JSON-RPC connection.
type process struct {
	gen  int
	path string
	proc *agentproc.Process
	conn *jsonrpc.Conn

	version string // the CLI's version, from the handshake

	ready chan struct{} // closed once conn is set (its reader starts before)
}

type processConfig struct {
	path    string
	workDir string
	env     []string
	grace   time.Duration
	log     *slog.Logger
	conn    jsonrpc.Options
	// handler makes the handler of the new process's connection.
	handler func(*process) jsonrpc.Handler
}

// startProcess spawns the CLI in a process group of its own (see
// agentproc): the npm loader runs the native binary with spawnSync and does
// not forward signals, so only signalling the whole group stops both.
func startProcess(gen int, cfg processConfig) (*process, error) {
	name, args, err := command(cfg.path)
	if err != nil {
		return nil, err
	}
	proc, err := agentproc.Start(agentproc.Config{
		Path: name,
		Args: args,
		Dir:  cfg.workDir,
		Env:  cfg.env,
		// NODE_DEBUG would make the npm loader print to stderr.
		Unset: []string{"NODE_DEBUG"},
		Grace: cfg.grace,
		StderrLine: func(line []byte) {
			if cfg.log != nil {
				cfg.log.Debug("copilot CLI stderr", "line", string(line))
			}
		},
	})
	if err != nil {
		return nil, startWords.Error(name, err)
	}
	p := &process{
		gen:   gen,
		path:  name,
		proc:  proc,
		ready: make(chan struct{}),
	}
	if len(args) > 0 && strings.HasSuffix(args[0], ".js") {
		p.path = args[0]
	}
	p.conn = jsonrpc.NewConn(proc.Stdout(), proc.Stdin(), cfg.handler(p), cfg.conn)
	proc.Watch(p.conn.Done(), func() error {
		p.conn.Close(nil)
		p.conn.Wait()
		return p.cause()
	})
	close(p.ready)
	return p, nil
}

// cause explains why the process ended: its output became unreadable (and
// nobody stopped it on purpose), else what ExitError says.
func (p *process) cause() error {
	var fe *jsonrpc.FrameError
	if errors.As(p.conn.Err(), &fe) && !p.proc.Stopped() {
		return fmt.Errorf("copilot: the CLI's output became unreadable (%v); it was stopped", fe)
	}
	return p.proc.ExitError("copilot: the CLI")
}

// Agent is the CLI's process, for the Keeper.
func (p *process) Agent() *agentproc.Process { return p.proc }

// stop ends the process cleanly: close stdin (the CLI exits by itself on
// EOF), wait, then signal the group, TERM and at last KILL.
func (p *process) stop() { p.proc.Stop() }

// alive reports whether the process can still take requests.
func (p *process) alive() bool { return p.proc.Alive() }

// deathErr is the error a turn reports when the process died under it.
func (p *process) deathErr() error { return p.proc.Wait() }
