package acp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// process is one running agent and its ACP connection.
type process struct {
	argv   []string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File // our read end; closed by watch once the agent is gone
	conn   *sdk.ClientSideConnection
	stderr *tailWriter
	grace  time.Duration
	log    *slog.Logger
	order  orderer // keeps the agent's requests behind its notifications

	// What initialize returned; set before the process is shared.
	info sdk.InitializeResponse

	exited    chan struct{} // closed when the direct child has exited
	waitErr   error         // its exit status; read after exited
	closeOnce sync.Once     // stdin

	stopping chan struct{} // closed when we asked it to stop
	stopOnce sync.Once

	done chan struct{} // closed when everything is torn down
	err  error         // why it ended; read after done
}

// startProcess spawns the agent in a process group of its own, so that
// stopping it reaches what it started too: the npm launcher of `copilot`
// runs the native binary as a child and does not forward SIGTERM, and tools
// leave shells behind.
func startProcess(argv []string, workDir string, env []string, grace time.Duration, client *router, log *slog.Logger) (*process, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("%w: %q (%v); install the agent or fix --acp-command", ErrAgentNotFound, argv[0], err)
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Dir = workDir
	cmd.Env = append(os.Environ(), env...)
	setProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("acp: stdin pipe: %w", err)
	}
	// An *os.File for stdout, not StdoutPipe: Wait then never closes our
	// read end, so the reader takes what the agent wrote before exiting.
	outR, outW, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return nil, fmt.Errorf("acp: stdout pipe: %w", err)
	}
	cmd.Stdout = outW
	tail := &tailWriter{max: 4096, log: log}
	cmd.Stderr = tail
	// A tool's background process may keep stderr open; do not wait for it
	// once the agent itself has exited.
	cmd.WaitDelay = grace
	if err := cmd.Start(); err != nil {
		stdin.Close()
		outR.Close()
		outW.Close()
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("%w: %v; install the agent or fix --acp-command", ErrAgentNotFound, err)
		}
		return nil, fmt.Errorf("acp: starting %s: %w", path, err)
	}
	outW.Close()
	p := &process{
		argv:     argv,
		cmd:      cmd,
		stdin:    stdin,
		stdout:   outR,
		stderr:   tail,
		grace:    grace,
		log:      log,
		exited:   make(chan struct{}),
		stopping: make(chan struct{}),
		done:     make(chan struct{}),
	}
	p.conn = sdk.NewClientSideConnection(client, stdin, outR)
	p.conn.SetLogger(log)
	client.p.Store(p)
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	go p.watch()
	return p, nil
}

// watch tears the process down when it exits or its output ends, and
// records why.
func (p *process) watch() {
	select {
	case <-p.exited:
		// The group outlives its leader when the agent left children (the
		// native binary when only the npm launcher died, shells its tools
		// started). The group id cannot be reused while a member lives, so
		// this reaches only what the agent left.
		signalGroup(p.cmd, true)
		// Give the reader a moment to take what the agent wrote last.
		t := time.NewTimer(p.grace)
		select {
		case <-p.conn.Done():
		case <-t.C:
		}
		t.Stop()
	case <-p.conn.Done():
		// End of its output while it lives on: it is no use any more.
		p.terminate()
	}
	p.stdout.Close() // ends the SDK's reader if it still waits
	<-p.conn.Done()
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
	exit := "still running"
	select {
	case <-p.exited:
		exit = "exit status 0"
		if p.waitErr != nil {
			exit = p.waitErr.Error()
		}
	default:
	}
	msg := fmt.Sprintf("acp: the agent (%s) exited unexpectedly (%s)", strings.Join(p.argv, " "), exit)
	if tail := p.stderr.Tail(); tail != "" {
		msg += "; its last output: " + tail
	}
	return errors.New(msg)
}

// errStopped is the cause of a process we stopped on purpose.
var errStopped = errors.New("acp: the agent was stopped")

// stop ends the process: close stdin (the agents exit on EOF), wait, then
// signal the whole group, TERM and at last KILL.
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
	signalGroup(p.cmd, true) // what the agent left in its group
}

// waitExit waits up to d for the direct child to exit.
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

// dead returns the reason the connection is gone, or nil while it lives.
// It waits for the teardown, so the reason includes the exit status.
func (p *process) dead() error {
	select {
	case <-p.conn.Done():
		<-p.done
		return p.err
	default:
		return nil
	}
}

// tailWriter keeps the last bytes the agent wrote to stderr (for error
// messages) and puts each line in the relay's log.
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
		if line := bytes.TrimSpace(t.line[:i]); len(line) > 0 {
			t.log.Info("acp agent stderr", "line", string(line))
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
