package agentproc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
)

// envHelper makes the test binary play an agent; its value names the part.
const envHelper = "AGENTPROC_TEST_HELPER"

// TestMain lets the test binary play the agents of these tests. Once the
// tests pass it checks that no goroutine of a Process outlived them.
func TestMain(m *testing.M) {
	if mode := os.Getenv(envHelper); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(testsupport.AfterTests(m.Run(), "internal/agentproc", "pilotdesk/internal/agentproc"))
}

// helper is the agent: "echo" copies stdin to stdout and exits at its end;
// "crash" writes to stderr and exits 3; "env" prints the variables named in
// its arguments; "stubborn" ignores stdin and SIGTERM, starts a child of
// its own ("sleep") and prints both pids; "sleep" ignores stdin.
func helper(mode string) int {
	switch mode {
	case "echo":
		_, _ = io.Copy(os.Stdout, os.Stdin)
		return 0
	case "crash":
		for i := 1; i <= 7; i++ {
			fmt.Fprintf(os.Stderr, "line %d\n", i)
		}
		fmt.Fprint(os.Stderr, "crashing on purpose")
		return 3
	case "env":
		for _, name := range os.Args[1:] {
			v, ok := os.LookupEnv(name)
			fmt.Printf("%s=%s %v\n", name, v, ok)
		}
		return 0
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), envHelper+"=sleep")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("%d %d\n", os.Getpid(), child.Process.Pid)
		time.Sleep(time.Hour) // not select{}: the runtime would call that a deadlock and exit
		return 0
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	}
	if h, ok := platformHelpers[mode]; ok {
		return h()
	}
	fmt.Fprintf(os.Stderr, "unknown mode %q\n", mode)
	return 2
}

// platformHelpers are the helpers of one platform's tests, by mode.
var platformHelpers = map[string]func() int{}

// agent is a started helper with a stand-in for the connection: a reader
// of its stdout, whose end is the connection's.
type agent struct {
	*Process
	lines    chan string   // what it wrote to stdout
	connDone chan struct{} // closed at the end of stdout, or by the test
	connOnce sync.Once
	mu       sync.Mutex
	stderr   []string // the lines StderrLine got
	settled  int      // how often settle ran
}

const grace = 300 * time.Millisecond

// start starts the helper in mode with args, and watches it.
func start(t *testing.T, mode string, env []string, unset []string, args ...string) *agent {
	t.Helper()
	return startGrace(t, grace, mode, env, unset, args...)
}

// startGrace is start with a grace of its own, which Stop waits for each
// step (EOF, SIGTERM) to work.
func startGrace(t *testing.T, grace time.Duration, mode string, env []string, unset []string, args ...string) *agent {
	t.Helper()
	a := &agent{lines: make(chan string, 16), connDone: make(chan struct{})}
	p, err := Start(Config{
		Path: os.Args[0],
		Args: args,
		Dir:  t.TempDir(),
		// A -race binary otherwise sleeps 1 s at exit.
		Env:   append([]string{envHelper + "=" + mode, "GORACE=atexit_sleep_ms=0"}, env...),
		Unset: unset,
		Grace: grace,
		StderrLine: func(line []byte) {
			a.mu.Lock()
			a.stderr = append(a.stderr, string(line))
			a.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	a.Process = p
	go func() {
		sc := bufio.NewScanner(p.Stdout())
		for sc.Scan() {
			a.lines <- sc.Text()
		}
		a.endConn()
	}()
	p.Watch(a.connDone, func() error {
		<-a.connDone
		a.mu.Lock()
		a.settled++
		a.mu.Unlock()
		return p.ExitError("the helper")
	})
	t.Cleanup(func() {
		p.Stop()
	})
	return a
}

func (a *agent) endConn() { a.connOnce.Do(func() { close(a.connDone) }) }

func (a *agent) line(t *testing.T) string {
	t.Helper()
	select {
	case l := <-a.lines:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no line from the helper")
		return ""
	}
}

func waitDone(t *testing.T, p *Process) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the process was not torn down")
	}
}

// TestStop: Stop closes stdin, which ends an agent that exits on EOF
// (by itself, with status 0: no signal was needed); settle runs once, and
// what it says is Err. The grace is long, so that a machine too busy to
// let the agent exit within the usual 300 ms does not have it killed:
// without the EOF, Stop would take that whole grace and then SIGTERM it.
func TestStop(t *testing.T) {
	a := startGrace(t, 30*time.Second, "echo", nil, nil)
	if _, err := io.WriteString(a.Stdin(), "hello\n"); err != nil {
		t.Fatal(err)
	}
	if got := a.line(t); got != "hello" {
		t.Fatalf("echoed %q", got)
	}
	if !a.Alive() || a.Dead() != nil || a.Err() != nil || a.Stopped() {
		t.Fatalf("a running agent: alive %v, dead %v, err %v, stopped %v", a.Alive(), a.Dead(), a.Err(), a.Stopped())
	}
	if a.Pid() <= 0 {
		t.Errorf("pid %d", a.Pid())
	}
	a.Stop()
	if a.waitErr != nil {
		t.Errorf("after Stop the agent ended with %v, want its own exit on EOF, status 0", a.waitErr)
	}
	if !a.Stopped() || a.Alive() {
		t.Errorf("after Stop: stopped %v, alive %v", a.Stopped(), a.Alive())
	}
	// settle's error, ExitError's after a Stop: no "exited unexpectedly".
	if err := a.Wait(); err == nil || err.Error() != "the helper was stopped" {
		t.Errorf("Wait = %v, want settle's error, the helper was stopped", err)
	}
	if err := a.Err(); err == nil || err.Error() != "the helper was stopped" {
		t.Errorf("Err = %v, want settle's error, the helper was stopped", err)
	}
	a.Stop() // a second Stop is harmless
	if a.settled != 1 {
		t.Errorf("settle ran %d times", a.settled)
	}
}

// TestExitError: an agent that exits by itself is torn down; the error
// has its exit status and the last lines of its stderr, each of which
// StderrLine got.
func TestExitError(t *testing.T) {
	a := start(t, "crash", nil, nil)
	waitDone(t, a.Process)
	err := a.Dead()
	want := "the helper exited unexpectedly (exit status 3); its last output: line 4 | line 5 | line 6 | line 7 | crashing on purpose"
	if err == nil || err.Error() != want {
		t.Errorf("Dead = %v\nwant   %s", err, want)
	}
	if a.Stopped() || a.Alive() {
		t.Errorf("stopped %v, alive %v", a.Stopped(), a.Alive())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// The last line has no newline: it is in the tail, not a line.
	if got := strings.Join(a.stderr, ","); got != "line 1,line 2,line 3,line 4,line 5,line 6,line 7" {
		t.Errorf("stderr lines: %s", got)
	}
}

// TestConnectionEnd: when the connection ends while the agent lives on, the
// agent is stopped (here by SIGTERM, as it ignores stdin).
func TestConnectionEnd(t *testing.T) {
	a := start(t, "sleep", nil, nil)
	if err := a.Dead(); err != nil {
		t.Fatalf("Dead = %v while the connection lives", err)
	}
	a.endConn()
	if a.Alive() {
		t.Error("alive after the connection ended")
	}
	waitDone(t, a.Process)
	err := a.Wait()
	want := "the helper exited unexpectedly (signal: terminated)"
	if runtime.GOOS == "windows" {
		want = "the helper exited unexpectedly (exit status 1)" // killed
	}
	if err == nil || err.Error() != want {
		t.Errorf("Wait = %v, want %s", err, want)
	}
	if a.Stopped() {
		t.Error("Stopped, but nobody called Stop")
	}
}

// TestEnvironment: the relay's environment minus Unset, plus Env, later
// entries winning.
func TestEnvironment(t *testing.T) {
	t.Setenv("AGENTPROC_TEST_KEEP", "kept")
	t.Setenv("AGENTPROC_TEST_DROP", "dropped")
	t.Setenv("AGENTPROC_TEST_DROPPED_NOT", "kept too")
	a := start(t, "env", []string{"AGENTPROC_TEST_ADDED=1", "AGENTPROC_TEST_ADDED=2"}, []string{"AGENTPROC_TEST_DROP"},
		"AGENTPROC_TEST_KEEP", "AGENTPROC_TEST_DROP", "AGENTPROC_TEST_DROPPED_NOT", "AGENTPROC_TEST_ADDED")
	for _, want := range []string{
		"AGENTPROC_TEST_KEEP=kept true",
		"AGENTPROC_TEST_DROP= false",
		"AGENTPROC_TEST_DROPPED_NOT=kept too true",
		"AGENTPROC_TEST_ADDED=2 true",
	} {
		if got := a.line(t); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestEnviron(t *testing.T) {
	got := environ([]string{"A=1", "NODE_DEBUG=x", "NODE_DEBUGGER=y", "B="}, []string{"NODE_DEBUG"}, []string{"C=3"})
	if want := "A=1 NODE_DEBUGGER=y B= C=3"; strings.Join(got, " ") != want {
		t.Errorf("environ = %q, want %q", got, want)
	}
}

// TestStartError: a command that cannot start is Start's error, as
// exec.Cmd.Start says it.
func TestStartError(t *testing.T) {
	_, err := Start(Config{Path: t.TempDir() + "/missing", Grace: grace})
	var pipe *PipeError
	if err == nil || !errors.Is(err, os.ErrNotExist) || errors.As(err, &pipe) {
		t.Errorf("Start = %v, want a not-exist error", err)
	}
}

func TestPipeError(t *testing.T) {
	err := error(&PipeError{Pipe: "stdin", Err: os.ErrClosed})
	if err.Error() != "stdin pipe: "+os.ErrClosed.Error() || !errors.Is(err, os.ErrClosed) {
		t.Errorf("PipeError: %v", err)
	}
}
