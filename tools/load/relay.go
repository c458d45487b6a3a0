package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// relayProc is the `pilotdesk serve` child.
type relayProc struct {
	cmd     *exec.Cmd
	url     string
	token   string
	logPath string

	mu       sync.Mutex
	warnings []string // WARN and ERROR lines of its log
	exited   chan struct{}
	waitErr  error
}

var listening = regexp.MustCompile(`relay listening.* url=(ws://[^ ]+)`)

// newToken returns a random token for the relay.
func newToken() string {
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	return hex.EncodeToString(tok[:])
}

// sqliteArgs are the history flags of the single relay: SQLite in dir/data
// (the same data dir for a restart), or memory.
func sqliteArgs(cfg config, dir string) []string {
	if cfg.Memory {
		return []string{"--data-dir", ":memory:"}
	}
	return []string{"--data-dir", filepath.Join(dir, "data")}
}

// startRelay writes the script and starts a relay with token and the
// history flags storeArgs; its log goes to dir/logName. With an island it
// runs there (a relay-partition's victim), listening on the island's
// address; else here on 127.0.0.1.
func startRelay(ctx context.Context, cfg config, dir, token, logName string, storeArgs []string, is *island) (*relayProc, error) {
	scriptPath := filepath.Join(dir, "script.json")
	if err := os.WriteFile(scriptPath, loadScript(cfg), 0o600); err != nil {
		return nil, fmt.Errorf("writing the script: %w", err)
	}
	for i, a := range storeArgs {
		if a == "--data-dir" && i+1 < len(storeArgs) && storeArgs[i+1] != ":memory:" {
			if err := os.MkdirAll(storeArgs[i+1], 0o700); err != nil {
				return nil, err
			}
		}
	}
	// The agent's folder (--workdir) is an empty one of the run's, not the
	// load tool's current directory: the relay snapshots it at each Act
	// turn's start and end (checkpoints): run from tools/load, each turn
	// of the load's relays snapshotted the whole repository.
	workDir := filepath.Join(dir, strings.TrimSuffix(logName, ".log")+"-work")
	if err := os.MkdirAll(workDir, 0o700); err != nil {
		return nil, err
	}
	p := &relayProc{token: token, logPath: filepath.Join(dir, logName), exited: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--agent", "script", "--script", scriptPath, "--workdir", workDir}, storeArgs...)
	args = append(args, "--token", p.token)
	if is != nil {
		p.cmd = is.command(cfg.Bin, append(args, "--listen", is.Addr+":0")...)
	} else {
		p.cmd = exec.Command(cfg.Bin, append(args, "--listen", "127.0.0.1:0")...)
	}
	p.cmd.Env = append(os.Environ(), "PILOTDESK_TOKEN=", "PILOTDESK_NATS_PASSWORD="+cfg.natsPassword)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", cfg.Bin, err)
	}
	urlCh := make(chan string, 1)
	go func() {
		defer logFile.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case urlCh <- m[1]:
				default:
				}
			}
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				p.mu.Lock()
				p.warnings = append(p.warnings, line)
				p.mu.Unlock()
			}
		}
		_, _ = io.Copy(logFile, stderr)
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	select {
	case p.url = <-urlCh:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("the relay exited at start (%v); its log is in %s", p.waitErr, p.logPath)
	case <-time.After(60 * time.Second):
		p.kill()
		return nil, fmt.Errorf("the relay did not listen within 60 s; its log is in %s", p.logPath)
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	}
}

// loadScript is the scripted agent's scenario: every prompt gets a turn
// whose first delta is the prompt itself (it carries the send time, so the
// first delta's latency is measured end to end), then -deltas deltas of
// -payload bytes, -interval apart.
func loadScript(cfg config) []byte {
	steps := []map[string]string{{"delta": "{{prompt}}"}}
	for i := range cfg.Deltas {
		word := fmt.Sprintf(" w%04d", i)
		text := strings.Repeat("x", max(cfg.Payload-len(word), 0)) + word
		steps = append(steps, map[string]string{"sleep": cfg.Interval.String()}, map[string]string{"delta": text[len(text)-cfg.Payload:]})
	}
	b, _ := json.Marshal(map[string]any{"turns": []any{map[string]any{"steps": steps}}})
	return b
}

// stop asks the relay to shut down (SIGTERM) and waits; it kills it after
// timeout.
func (p *relayProc) stop(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.waitErr
	case <-time.After(timeout):
		p.kill()
		return fmt.Errorf("the relay did not stop within %v of SIGTERM; killed", timeout)
	}
}

func (p *relayProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

func (p *relayProc) warningLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.warnings...)
}

// procStatus reads a field of /proc/PID/status in kB (VmHWM: peak RSS,
// VmRSS: RSS now).
func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// procCPU is the user and system CPU time the process has used.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// selfCPU is this process's user and system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// raiseFileLimit raises the soft limit on open files to the hard limit, for
// this process and the relay it starts (children inherit it), and checks
// that it fits n connections.
func raiseFileLimit(n int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("reading the open-file limit: %w", err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raising the open-file limit to %d: %w", lim.Max, err)
	}
	if need := uint64(n) + 256; lim.Cur < need {
		return fmt.Errorf("the open-file limit is %d but %d connections need about %d: raise the hard limit (ulimit -Hn)", lim.Cur, n, need)
	}
	return nil
}
