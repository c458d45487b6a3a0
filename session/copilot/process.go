package copilot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pilotdesk/pilotdesk/session/copilot/jsonrpc"
)

// ProtocolVersion is the SDK protocol version this backend speaks. The
// Copilot CLI reports its own in the connect handshake.
const ProtocolVersion = 3

// cliArgs switch the CLI into its SDK server mode on stdio.
var cliArgs = []string{"--headless", "--no-auto-update", "--stdio"}

// installHint tells a person how to get the CLI.
const installHint = "install it with `npm install -g @github/copilot` (Node.js 22 or newer), or pass its path with --copilot-path"

// command resolves the executable to run: the configured path, else
// "copilot" on PATH; a .js path (the npm loader) runs with node.
func command(path string) (name string, args []string, err error) {
	if path == "" {
		found, err := exec.LookPath("copilot")
		if err != nil {
			return "", nil, fmt.Errorf("%w: no `copilot` on PATH; %s", ErrCLINotFound, installHint)
		}
		path = found
	} else if !strings.ContainsRune(path, filepath.Separator) && !strings.ContainsRune(path, '/') {
		found, err := exec.LookPath(path)
		if err != nil {
			return "", nil, fmt.Errorf("%w: no %q on PATH; %s", ErrCLINotFound, path, installHint)
		}
		path = found
	} else {
		info, err := os.Stat(path)
		if err != nil {
			return "", nil, fmt.Errorf("%w: %s does not exist; %s", ErrCLINotFound, path, installHint)
		}
		if info.IsDir() {
			return "", nil, fmt.Errorf("%w: %s is a directory, not the copilot executable; %s", ErrCLINotFound, path, installHint)
		}
	}
	if strings.HasSuffix(path, ".js") {
		node, err := exec.LookPath("node")
		if err != nil {
			return "", nil, fmt.Errorf("%w: %s is a Node.js script but `node` is not on PATH", ErrCLINotFound, path)
		}
		return node, append([]string{path}, cliArgs...), nil
	}
	return path, append([]string(nil), cliArgs...), nil
}

// process is one running CLI and its JSON-RPC connection.
type process struct {
	gen    int
	path   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File // our read end; closed by watch once the process is gone
	conn   *jsonrpc.Conn
	stderr *tailWriter
	grace  time.Duration

	version string // the CLI's version, from the handshake

	ready chan struct{} // closed once conn is set (its reader starts before)

	exited    chan struct{} // closed when the direct child has exited
	waitErr   error         // its exit status; read after exited
	closeOnce sync.Once     // stdin

	stopping chan struct{} // closed when we asked it to stop
	stopOnce sync.Once

	done chan struct{} // closed when everything is torn down
	err  error         // why it ended; read after done
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

// startProcess spawns the CLI in a process group of its own: the npm loader
// runs the native binary with spawnSync and does not forward signals, so only
// signalling the whole group stops both.
func startProcess(gen int, cfg processConfig) (*process, error) {
	name, args, err := command(cfg.path)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = cfg.workDir
	cmd.Env = cliEnv(cfg.env)
	setProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("copilot: stdin pipe: %w", err)
	}
	// An *os.File for stdout, not StdoutPipe: Wait then never closes our
	// read end, so the reader can drain what the CLI wrote before exiting.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("copilot: stdout pipe: %w", err)
	}
	cmd.Stdout = outW
	tail := &tailWriter{max: 4096, log: cfg.log}
	cmd.Stderr = tail
	// A tool's background process may inherit stderr; do not wait for it
	// forever once the CLI itself has exited.
	cmd.WaitDelay = cfg.grace
	if err := cmd.Start(); err != nil {
		outR.Close()
		outW.Close()
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %v; %s", ErrCLINotFound, err, installHint)
		}
		return nil, fmt.Errorf("copilot: starting %s: %w", cfg.path, err)
	}
	outW.Close()
	p := &process{
		gen:      gen,
		path:     name,
		cmd:      cmd,
		stdin:    stdin,
		stdout:   outR,
		stderr:   tail,
		grace:    cfg.grace,
		exited:   make(chan struct{}),
		stopping: make(chan struct{}),
		done:     make(chan struct{}),
		ready:    make(chan struct{}),
	}
	if len(args) > 0 && strings.HasSuffix(args[0], ".js") {
		p.path = args[0]
	}
	p.conn = jsonrpc.NewConn(outR, stdin, cfg.handler(p), cfg.conn)
	close(p.ready)
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	go p.watch()
	return p, nil
}

// cliEnv is our environment for the CLI plus extra, minus NODE_DEBUG (which
// would make the npm loader print to stderr).
func cliEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "NODE_DEBUG=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// watch tears the process down when it exits or its output turns unreadable,
// and records why.
func (p *process) watch() {
	select {
	case <-p.exited:
		// The CLI may leave processes behind in its group: the native
		// binary when only the npm loader died, or shells its tools
		// started. The group id cannot be reused while any member lives,
		// so this reaches only what the CLI left.
		signalGroup(p.cmd, true)
		// Give the reader a moment to take what the CLI wrote last.
		t := time.NewTimer(p.grace)
		select {
		case <-p.conn.Done():
		case <-t.C:
		}
		t.Stop()
	case <-p.conn.Done():
		// End of stream or garbage while the process lives on: it is no use
		// to us any more.
		p.terminate()
	}
	p.stdout.Close() // unblocks the reader if it still waits
	p.conn.Close(nil)
	p.conn.Wait()
	p.err = p.cause()
	close(p.done)
}

// cause explains why the process ended.
func (p *process) cause() error {
	select {
	case <-p.stopping:
		return errStopped
	default:
	}
	connErr := p.conn.Err()
	var fe *jsonrpc.FrameError
	if errors.As(connErr, &fe) {
		return fmt.Errorf("copilot: the CLI's output became unreadable (%v); it was stopped", fe)
	}
	var exit string
	select {
	case <-p.exited:
		if p.waitErr != nil {
			exit = p.waitErr.Error()
		} else {
			exit = "exit status 0"
		}
	default:
		exit = "still running"
	}
	msg := fmt.Sprintf("copilot: the CLI exited unexpectedly (%s)", exit)
	if tail := p.stderr.Tail(); tail != "" {
		msg += "; its last output: " + tail
	}
	return errors.New(msg)
}

// errStopped is the cause of a process we stopped on purpose.
var errStopped = errors.New("copilot: the CLI was stopped")

// stop ends the process cleanly: close stdin (the CLI exits by itself on
// EOF), wait, then signal the group, TERM and at last KILL.
func (p *process) stop() {
	p.stopOnce.Do(func() { close(p.stopping) })
	p.terminate()
	<-p.done
}

func (p *process) terminate() {
	p.closeOnce.Do(func() { p.stdin.Close() })
	if !p.waitExit(p.grace) {
		signalGroup(p.cmd, false)
		if !p.waitExit(p.grace) {
			signalGroup(p.cmd, true)
			<-p.exited
		}
	}
	signalGroup(p.cmd, true) // what the CLI left in its group
}

// waitExit waits up to d for the process to exit.
func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// alive reports whether the process can still take requests.
func (p *process) alive() bool {
	select {
	case <-p.done:
		return false
	case <-p.conn.Done():
		return false
	default:
		return true
	}
}

// deathErr is the error a turn reports when the process died under it.
func (p *process) deathErr() error {
	<-p.done
	return p.err
}

// tailWriter keeps the last bytes the CLI wrote to stderr (for error
// messages) and logs each line at debug level.
type tailWriter struct {
	mu   sync.Mutex
	max  int
	buf  []byte
	line []byte
	log  *slog.Logger
}

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	t.line = append(t.line, b...)
	for {
		i := bytes.IndexByte(t.line, '\n')
		if i < 0 {
			break
		}
		if t.log != nil {
			t.log.Debug("copilot CLI stderr", "line", string(t.line[:i]))
		}
		t.line = t.line[i+1:]
	}
	if len(t.line) > t.max {
		t.line = t.line[len(t.line)-t.max:]
	}
	return len(b), nil
}

// Tail returns the last few lines, trimmed, for an error message.
func (t *tailWriter) Tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	lines := strings.Split(s, "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	tail := strings.Join(lines, " | ")
	if len(tail) > 600 {
		tail = "…" + strings.ToValidUTF8(tail[len(tail)-600:], "")
	}
	return tail
}
