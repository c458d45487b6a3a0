package copilot_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/backend"
	"github.com/pilotdesk/pilotdesk/session/copilot"
	"github.com/pilotdesk/pilotdesk/session/copilot/internal/fakecli"
)

// TestMain lets the test binary play the Copilot CLI: the backend under test
// re-executes it with fakecli.EnvEnable=1. Once the tests pass it checks
// that no goroutine of the backend (or its subpackages) or of its process
// handling outlived them.
func TestMain(m *testing.M) {
	if os.Getenv(fakecli.EnvEnable) == "1" {
		os.Exit(fakecli.Main())
	}
	os.Exit(testsupport.AfterTests(m.Run(), "session/copilot",
		"pilotdesk/session/copilot", "pilotdesk/internal/agentproc"))
}

// wait is the generous deadline of every wait in these tests.
const wait = 20 * time.Second

// fakeCLI is one test's fake CLI setup: its request log and session store.
type fakeCLI struct {
	t       *testing.T
	logPath string
}

// newFake returns Options that run the fake CLI, with extra env for it.
func newFake(t *testing.T, env ...string) (copilot.Options, *fakeCLI) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &fakeCLI{t: t, logPath: filepath.Join(dir, "requests.jsonl")}
	opts := copilot.Options{
		Path:    exe,
		WorkDir: dir,
		Logger:  testsupport.Logger(t),
		Limits:  backend.Limits{StopGrace: 2 * time.Second},
		Env: append([]string{
			fakecli.EnvEnable + "=1",
			fakecli.EnvLog + "=" + f.logPath,
			fakecli.EnvState + "=" + state,
			// A -race binary otherwise sleeps 1 s at exit.
			"GORACE=atexit_sleep_ms=0",
		}, env...),
	}
	return opts, f
}

// requests returns what the fake CLI(s) received, in order.
func (f *fakeCLI) requests() []fakecli.LogEntry {
	f.t.Helper()
	return testsupport.ReadJSONLines[fakecli.LogEntry](f.t, f.logPath)
}

// methods lists the request methods received, optionally only those of pid.
func (f *fakeCLI) methods() []string {
	var out []string
	for _, e := range f.requests() {
		out = append(out, e.Method)
	}
	return out
}

func (f *fakeCLI) pids() []int {
	var out []int
	seen := map[int]bool{}
	for _, e := range f.requests() {
		if !seen[e.PID] {
			seen[e.PID] = true
			out = append(out, e.PID)
		}
	}
	return out
}

func (f *fakeCLI) find(method string) []fakecli.LogEntry {
	var out []fakecli.LogEntry
	for _, e := range f.requests() {
		if e.Method == method {
			out = append(out, e)
		}
	}
	return out
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// testHost is the Host of these tests.
type testHost = testsupport.Host

func newHost(mode string) *testHost { return testsupport.NewHost(mode) }

// newAgent makes an Agent closed at the end of the test.
func newAgent(t *testing.T, opts copilot.Options) *copilot.Agent {
	t.Helper()
	a, err := copilot.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func open(t *testing.T, a session.Agent, conv string, opts session.OpenOptions, h session.Host) session.Session {
	t.Helper()
	return testsupport.Open(t, wait, a, conv, opts, h)
}

func run(t *testing.T, s session.Session, prompt string) error {
	t.Helper()
	return testsupport.Run(t, wait, s, prompt)
}

// asEvents is es as events, for testsupport.Describe.
func asEvents[E session.Event](es []E) []session.Event {
	var out []session.Event
	for _, e := range es {
		out = append(out, e)
	}
	return out
}

// listeningURL is a provider URL whose address takes connections (the fake
// CLI never calls it; the backend checks that it answers).
func listeningURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String() + "/v1"
}
