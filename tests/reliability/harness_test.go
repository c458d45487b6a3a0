package reliability

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testbin"
	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// timeout bounds every wait of these tests. It is generous: the machine is
// small and others compile on it at the same time.
const timeout = 60 * time.Second

// pilotdesk is the real binary, built once per test run.
func pilotdesk(t *testing.T) string { return testbin.Build(t) }

func TestMain(m *testing.M) {
	// The tests run as parallel ones and mostly wait: on a relay process
	// (not built with -race), on a server's timeout (TestIdleKeepAliveClosed
	// waits a minute, TestSlowloris ten seconds), on leases. Three at a
	// time, not more: the floods and the replays of 30 MiB read what the
	// relay sends in this process, with -race, and four of them at once
	// on a busy 2-core machine took twice as long each.
	testsupport.WaitingParallel(3)
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// relayProc is a running `pilotdesk serve`.
type relayProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	URL  string // ws://127.0.0.1:PORT/ws or wss://…
	Addr string // 127.0.0.1:PORT
	log  *testbin.LogTail

	exited  chan struct{}
	waitErr error
}

var listeningLine = regexp.MustCompile(`relay listening.* url=(wss?)://([^/ ]+)/ws`)

// startRelay runs `pilotdesk serve args…` and waits until it listens. The
// process is killed when the test ends, if it still runs. env adds
// variables to the process's environment (PILOTDESK_TOKEN is cleared first
// so the caller's shell cannot leak a token in).
func startRelay(t *testing.T, env []string, args ...string) *relayProc {
	t.Helper()
	p := launchRelay(t, env, args...)
	line, ok := p.log.WaitFor(listeningLine, timeout)
	if !ok {
		p.kill()
		t.Fatalf("pilotdesk serve %s did not start; log:\n%s", strings.Join(args, " "), p.log.String())
	}
	m := listeningLine.FindStringSubmatch(line)
	p.Addr = m[2]
	p.URL = m[1] + "://" + m[2] + "/ws"
	return p
}

// workDirs is each test's default folder for the relays it starts (one per
// test, so a relay restarted, or several in a cluster, share it).
var workDirs sync.Map // *testing.T → string

// workDir is the test's default folder for its relays: an empty temporary
// folder, never the process's current directory (this package's source
// folder, inside the repository), which an Act turn would snapshot with git.
func workDir(t *testing.T) string {
	if dir, ok := workDirs.Load(t); ok {
		return dir.(string)
	}
	dir := t.TempDir()
	workDirs.Store(t, dir)
	t.Cleanup(func() { workDirs.Delete(t) })
	return dir
}

// launchRelay starts the process without waiting for it to listen. Unless
// args name one, the relay's default folder (--workdir) is the test's
// workDir.
func launchRelay(t *testing.T, env []string, args ...string) *relayProc {
	t.Helper()
	if !slices.ContainsFunc(args, func(a string) bool { return a == "--workdir" || strings.HasPrefix(a, "--workdir=") }) {
		args = append(slices.Clone(args), "--workdir", workDir(t))
	}
	cmd := exec.Command(pilotdesk(t), append([]string{"serve"}, args...)...)
	cmd.Env = append(append(os.Environ(), "PILOTDESK_TOKEN="), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &relayProc{t: t, cmd: cmd, log: testbin.NewLogTail(stderr), exited: make(chan struct{})}
	go func() {
		// Wait only after the log is read to its end (exec's rule for
		// StderrPipe).
		p.log.WaitDone()
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			// What the relay said is what explains a failure of a test
			// that runs several.
			t.Logf("--- pilotdesk serve %s: its log (tail) ---\n%s", strings.Join(args, " "), p.log.String())
		}
	})
	return p
}

// kill sends SIGKILL and waits for the process to be gone: no deferred
// function, no flush, no shutdown code runs in the relay.
func (p *relayProc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait()
}

// stop sends SIGTERM and fails the test unless the relay exits cleanly.
func (p *relayProc) stop() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatalf("SIGTERM: %v", err)
	}
	if err := p.wait(); err != nil {
		p.t.Errorf("pilotdesk serve exited with %v after SIGTERM; log:\n%s", err, p.log.String())
	}
}

// wait waits for the process to exit and returns what Wait returned.
func (p *relayProc) wait() error {
	select {
	case <-p.exited:
		return p.waitErr
	case <-time.After(timeout):
		p.t.Fatalf("pilotdesk serve still runs %s later; log:\n%s", timeout, p.log.String())
		return nil
	}
}

// exitCode waits for the process and returns its exit status.
func (p *relayProc) exitCode() int {
	p.t.Helper()
	_ = p.wait()
	return p.cmd.ProcessState.ExitCode()
}

// writeScript writes a scripted agent's scenario (docs/script-agent.md) and
// returns its path.
func writeScript(t *testing.T, script any) string {
	t.Helper()
	b, err := json.MarshalIndent(script, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// dataOf decodes a frame's data as a map.
func dataOf(t *testing.T, f relaytest.Frame) map[string]any {
	t.Helper()
	m := map[string]any{}
	if len(f.Data) > 0 {
		if err := json.Unmarshal(f.Data, &m); err != nil {
			t.Fatalf("frame %s: data is not an object: %v", f.Raw, err)
		}
	}
	return m
}

// expectPong sends a ping and fails unless the next frame is the pong: the
// connection is open and nothing else was sent meanwhile.
func expectPong(t *testing.T, cl *relaytest.Client, after string) {
	t.Helper()
	cl.Send("ping", nil)
	f, ok := cl.TryNext(timeout)
	if !ok {
		t.Fatalf("after %s: no pong; the connection ended: %v", after, cl.Err())
	}
	if f.Type != "pong" {
		t.Fatalf("after %s: got %s, want only a pong", after, f.Raw)
	}
}
