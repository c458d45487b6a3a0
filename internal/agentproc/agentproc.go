// Package agentproc runs the process of an agent that a backend talks to
// over its stdin and stdout (session/copilot, session/acp): it starts the
// command in a process group of its own with the relay's environment, keeps
// the tail of what it writes to stderr, tears it down when it exits or its
// connection ends, and stops the whole group with a grace period between
// closing stdin, SIGTERM and SIGKILL.
//
// A process group, because an agent's own children must go with it: the npm
// launcher of `copilot` runs the native binary as a child and does not
// forward signals, and tools leave shells behind.
package agentproc

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/shellquote"
)

// Config describes the command to start.
type Config struct {
	// Path is the executable and Args its arguments (not Path itself).
	Path string
	Args []string
	// Dir is its working directory; empty: ours.
	Dir string
	// Env is added to the relay's environment ("KEY=value"; later entries
	// win).
	Env []string
	// Unset names variables of the relay's environment that the agent does
	// not get.
	Unset []string
	// Grace is how long each step of stopping waits before the next (stdin
	// closed, SIGTERM, SIGKILL), how long the reader of stdout gets after
	// the agent exited, and how long Wait waits for stderr once it has.
	Grace time.Duration
	// StderrLine, when set, gets each line the agent writes to stderr,
	// without its newline.
	StderrLine func(line []byte)
}

// PipeError is a failure to make one of the agent's pipes; Start returns
// any other error from exec.Cmd.Start as it is.
type PipeError struct {
	Pipe string // "stdin" or "stdout"
	Err  error
}

func (e *PipeError) Error() string { return e.Pipe + " pipe: " + e.Err.Error() }
func (e *PipeError) Unwrap() error { return e.Err }

// Process is one running agent.
type Process struct {
	cmd    *exec.Cmd
	group  *group // the agent and what it started; the watcher releases it
	stdin  io.WriteCloser
	stdout *os.File // our read end; closed by the watcher once the agent is gone
	stderr *tail
	grace  time.Duration

	connDone <-chan struct{} // the connection over stdio ended; set by Watch

	exited    chan struct{} // closed when the direct child has exited
	waitErr   error         // its exit status; read after exited
	closeOnce sync.Once     // stdin

	stopping chan struct{} // closed when we asked it to stop
	stopOnce sync.Once

	done chan struct{} // closed when everything is torn down
	err  error         // why it ended; read after done
}

// NotRunnable reports whether Start failed because the executable cannot
// be run as given: it is not there, not on PATH, or not executable. The
// backends word it as their agent not found (session.ErrAgentNotFound),
// with what to install or fix, or, when NotExecutable, as their agent
// that cannot be run (session.ErrAgentNotExecutable).
func NotRunnable(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission)
}

// NotExecutable reports whether Start (or exec.LookPath of a path) failed
// because the file is there but this user may not run it: installing the
// agent again would not help, its mode (or its mount) would.
func NotExecutable(err error) bool { return errors.Is(err, os.ErrPermission) }

// StartWords is how a backend words a failure to start its agent: Who
// begins the errors that are not the agent's ("copilot", "acp"),
// NotFound and NotExecutable are the backend's own wrappings of the
// session package's errors, NotFoundFix says what to install or set,
// Setting what to change instead of a file that may not be run.
type StartWords struct {
	Who                     string
	NotFound, NotExecutable error
	NotFoundFix, Setting    string
}

// Error words err, Start's failure to run path.
func (w StartWords) Error(path string, err error) error {
	var pipe *PipeError
	switch {
	case errors.As(err, &pipe):
		return fmt.Errorf("%s: %w", w.Who, err)
	case NotExecutable(err):
		return w.NotExecutableError(path)
	case NotRunnable(err):
		return fmt.Errorf("%w: %v; %s", w.NotFound, err, w.NotFoundFix)
	}
	return fmt.Errorf("%s: starting %s: %w", w.Who, path, err)
}

// NotExecutableError says that path is there but may not be run, naming
// it, and how to mend it.
func (w StartWords) NotExecutableError(path string) error {
	return fmt.Errorf("%w: permission denied on %s; make it executable (chmod +x %s), or %s", w.NotExecutable, path, shellquote.Word(path), w.Setting)
}

// Start starts the command. The caller makes its connection on Stdin and
// Stdout, then calls Watch.
func Start(cfg Config) (*Process, error) {
	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Dir = cfg.Dir
	cmd.Env = environ(os.Environ(), cfg.Unset, cfg.Env)
	g := new(group)
	g.prepare(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, &PipeError{Pipe: "stdin", Err: err}
	}
	// An *os.File for stdout, not StdoutPipe: Wait then never closes our
	// read end, so the reader takes what the agent wrote before exiting.
	outR, outW, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return nil, &PipeError{Pipe: "stdout", Err: err}
	}
	cmd.Stdout = outW
	stderr := &tail{max: 4096, line: cfg.StderrLine}
	cmd.Stderr = stderr
	// A tool's background process may keep stderr open; do not wait for it
	// once the agent itself has exited.
	cmd.WaitDelay = cfg.Grace
	if err := g.start(cmd); err != nil {
		stdin.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	outW.Close()
	if err := g.join(cmd); err != nil {
		// The agent runs; only what it leaves behind may outlive a stop.
		slog.Warn("agent: its children may outlive it", "err", err)
	}
	p := &Process{
		cmd:      cmd,
		group:    g,
		stdin:    stdin,
		stdout:   outR,
		stderr:   stderr,
		grace:    cfg.Grace,
		exited:   make(chan struct{}),
		stopping: make(chan struct{}),
		done:     make(chan struct{}),
	}
	go func() {
		p.waitErr = cmd.Wait()
		g.reaped()
		close(p.exited)
	}()
	return p, nil
}

// environ is base without the variables named in unset, plus extra.
func environ(base, unset, extra []string) []string {
	var env []string
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !contains(unset, name) {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Stdin is the agent's stdin; Stop and the teardown close it.
func (p *Process) Stdin() io.WriteCloser { return p.stdin }

// Stdout is our read end of the agent's stdout. It reaches the end of its
// input once the agent has exited, or is closed by the teardown.
func (p *Process) Stdout() io.Reader { return p.stdout }

// Pid is the agent's process id (and its process group's).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Watch starts the watcher, which tears the process down when the agent
// exits or connDone (the end of the connection over its stdio) is closed:
// it stops what the agent left in its group, closes Stdout, then calls
// settle (which waits for the connection's reader and says why the process
// ended) and closes Done. Call Watch once, before the Process is shared.
func (p *Process) Watch(connDone <-chan struct{}, settle func() error) {
	p.connDone = connDone
	go p.watch(settle)
}

func (p *Process) watch(settle func() error) {
	select {
	case <-p.exited:
		// The group outlives its leader when the agent left children (the
		// native binary when only the npm launcher died, shells its tools
		// started). The group id cannot be reused while a member lives, so
		// this reaches only what the agent left.
		p.group.signal(p.cmd, true)
		// Give the reader a moment to take what the agent wrote last.
		t := time.NewTimer(p.grace)
		select {
		case <-p.connDone:
		case <-t.C:
		}
		t.Stop()
	case <-p.connDone:
		// End of its output while it lives on: it is no use any more.
		p.terminate()
	}
	p.stdout.Close() // ends the connection's reader if it still waits
	p.err = settle()
	p.group.release()
	close(p.done)
}

// Stop ends the process on purpose (Stopped reports true from then on):
// close stdin (the agents exit on EOF), wait, then signal the whole group,
// TERM and at last KILL; it returns once Done is closed. Watch must have
// been called.
func (p *Process) Stop() {
	p.stopOnce.Do(func() { close(p.stopping) })
	p.terminate()
	<-p.done
}

// Stopped reports whether Stop was called.
func (p *Process) Stopped() bool {
	select {
	case <-p.stopping:
		return true
	default:
		return false
	}
}

func (p *Process) terminate() {
	p.closeOnce.Do(func() { p.stdin.Close() })
	if !p.waitExit(p.grace) {
		p.group.signal(p.cmd, false)
		if !p.waitExit(p.grace) {
			p.group.signal(p.cmd, true)
			<-p.exited
		}
	}
	p.group.signal(p.cmd, true) // what the agent left in its group
}

// waitExit waits up to d for the direct child to exit.
func (p *Process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// Alive reports whether the process can still take requests: neither is it
// torn down nor has its connection ended.
func (p *Process) Alive() bool {
	select {
	case <-p.done:
		return false
	case <-p.connDone:
		return false
	default:
		return true
	}
}

// Done is closed once the process is torn down.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is why the process ended (what settle returned) once Done is closed;
// nil before.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Wait waits until the process is torn down and returns why it ended.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// Dead returns why the process ended once its connection has ended
// (waiting for the teardown, so that the reason has the exit status), and
// nil while the connection lives.
func (p *Process) Dead() error {
	select {
	case <-p.connDone:
		return p.Wait()
	default:
		return nil
	}
}

// ExitError says why who ended: "who was stopped" after Stop, else that
// it exited unexpectedly, with its exit status ("still running" while it
// runs) and the last lines it wrote to stderr: "who exited unexpectedly
// (exit status 3); its last output: …". It is what a backend's settle
// returns (see Watch) when its connection has no better reason.
func (p *Process) ExitError(who string) error {
	if p.Stopped() {
		return fmt.Errorf("%s was stopped", who)
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
	msg := fmt.Sprintf("%s exited unexpectedly (%s)", who, exit)
	if tail := p.stderr.Tail(); tail != "" {
		msg += "; its last output: " + tail
	}
	return errors.New(msg)
}
