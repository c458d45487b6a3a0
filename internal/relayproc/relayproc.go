// Package relayproc starts a `pilotdesk serve` child for the tools that
// measure a real relay (tools/load, tools/flood, tools/winbench): it passes
// the token, listens on a free loopback port, copies the relay's log to a
// file, keeps its WARN and ERROR lines, waits until it listens and stops
// it with SIGTERM.
package relayproc

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config is the relay to start.
type Config struct {
	Bin string // the pilotdesk binary
	// Args are serve's flags (the agent, the history); Start adds
	// --listen and --token.
	Args  []string
	Token string
	// Listen is the address to listen on; port 0 picks a free one.
	// Default 127.0.0.1:0.
	Listen string
	// Command makes the command to run (name and its arguments), where a
	// relay runs elsewhere (another network namespace); nil: exec.Command.
	Command func(name string, args ...string) *exec.Cmd
	// Env is added to this process's environment, after a PILOTDESK_TOKEN
	// emptied so that a token set there does not replace Token.
	Env     []string
	LogPath string // where the relay's log (its stderr) goes
}

// Relay is a running `pilotdesk serve`.
type Relay struct {
	Cmd     *exec.Cmd
	URL     string // ws://HOST:PORT/ws, HOST 127.0.0.1 unless Config.Listen says otherwise
	Addr    string // HOST:PORT
	LogPath string
	// Pprof is the base URL of its Go profiles (…/debug/pprof/) when
	// PILOTDESK_PPROF in Env served them, which serve logs before it
	// listens; else empty.
	Pprof string

	mu       sync.Mutex
	warnings []string // WARN and ERROR lines of its log

	exited  chan struct{} // closed once its log is read to its end and it was waited for
	waitErr error         // read after exited
}

var (
	listening = regexp.MustCompile(`relay listening.* url=(ws://([^/ ]+)[^ ]*)`)
	profiles  = regexp.MustCompile(`serving Go profiles.* url=(http://[^ ]+)`)
)

// listenTimeout bounds the wait for the relay to listen.
const listenTimeout = 60 * time.Second

// NewToken returns a random token for a relay.
func NewToken() string {
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	return hex.EncodeToString(tok[:])
}

// Start starts the relay and waits until it listens (60 s at most, or
// until ctx ends: then it is killed).
func Start(ctx context.Context, cfg Config) (*Relay, error) {
	r := &Relay{LogPath: cfg.LogPath, exited: make(chan struct{})}
	logFile, err := os.Create(cfg.LogPath)
	if err != nil {
		return nil, err
	}
	listen, command := cfg.Listen, cfg.Command
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	if command == nil {
		command = exec.Command
	}
	args := append(append([]string{"serve"}, cfg.Args...), "--listen", listen, "--token", cfg.Token)
	r.Cmd = command(cfg.Bin, args...)
	r.Cmd.Env = append(append(os.Environ(), "PILOTDESK_TOKEN="), cfg.Env...)
	stderr, err := r.Cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := r.Cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s serve: %w", cfg.Bin, err)
	}
	found := make(chan []string, 1)
	go r.readLog(stderr, logFile, found)
	select {
	case m := <-found:
		r.URL, r.Addr, r.Pprof = m[1], m[2], m[3]
		return r, nil
	case <-r.exited:
		return nil, fmt.Errorf("the relay exited at start (%v); its log is in %s", r.waitErr, r.LogPath)
	case <-time.After(listenTimeout):
		r.Kill()
		return nil, fmt.Errorf("the relay did not listen within %v; its log is in %s", listenTimeout, r.LogPath)
	case <-ctx.Done():
		r.Kill()
		return nil, ctx.Err()
	}
}

// readLog copies the relay's log to logFile, hands the listening line's
// match to found, with the profiles' URL logged before it appended (or
// ""), and keeps the warnings; at the log's end it waits for the relay
// (Wait closes the pipe: only after the log is read to its end, or its
// last lines are lost).
func (r *Relay) readLog(stderr io.Reader, logFile *os.File, found chan<- []string) {
	defer close(r.exited)
	defer logFile.Close()
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	pprofURL := ""
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(logFile, line)
		if m := profiles.FindStringSubmatch(line); m != nil {
			pprofURL = m[1]
		}
		if m := listening.FindStringSubmatch(line); m != nil {
			select {
			case found <- append(m, pprofURL):
			default:
			}
		}
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			r.mu.Lock()
			r.warnings = append(r.warnings, line)
			r.mu.Unlock()
		}
	}
	_, _ = io.Copy(logFile, stderr) // a line too long for the scanner
	r.waitErr = r.Cmd.Wait()
}

// Pid is the relay's process id.
func (r *Relay) Pid() int { return r.Cmd.Process.Pid }

// Exited is closed once the relay has exited and its log is complete.
func (r *Relay) Exited() <-chan struct{} { return r.exited }

// Stop asks the relay to shut down (SIGTERM) and waits for it, returning
// how it exited; after timeout it kills it and says so.
func (r *Relay) Stop(timeout time.Duration) error {
	_ = r.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
		return r.waitErr
	case <-time.After(timeout):
		r.Kill()
		return fmt.Errorf("the relay did not stop within %v of SIGTERM; killed", timeout)
	}
}

// Kill kills the relay (SIGKILL) and waits for it.
func (r *Relay) Kill() {
	_ = r.Cmd.Process.Kill()
	<-r.exited
}

// Warnings are the WARN and ERROR lines of the relay's log so far.
func (r *Relay) Warnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.warnings...)
}
