package acp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/acp"
	"github.com/pilotdesk/pilotdesk/session/acp/internal/fakeagent"
	"github.com/pilotdesk/pilotdesk/session/backend"
)

// TestMain lets the test binary play the ACP agent: the backend under test
// re-executes it with fakeagent.EnvEnable=1. Once the tests pass it checks
// that no goroutine of the backend, of its process handling or of the SDK
// outlived them.
func TestMain(m *testing.M) {
	if os.Getenv(fakeagent.EnvEnable) == "1" {
		os.Exit(fakeagent.Main())
	}
	os.Exit(testsupport.AfterTests(m.Run(), "session/acp or its SDK",
		"pilotdesk/session/acp", "pilotdesk/internal/agentproc", "coder/acp-go-sdk"))
}

// wait is the generous deadline of every wait in these tests.
const wait = 20 * time.Second

// fake is one test's fake agent setup: its request log, state and work dir.
type fake struct {
	t       *testing.T
	logPath string
	workDir string
}

// newFake returns Options that run the fake agent, with extra env for it.
func newFake(t *testing.T, env ...string) (acp.Options, *fake) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	work := filepath.Join(dir, "work")
	for _, d := range []string{state, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f := &fake{t: t, logPath: filepath.Join(dir, "requests.jsonl"), workDir: work}
	opts := acp.Options{
		Command:    "'" + strings.ReplaceAll(exe, "'", `'\''`) + "'",
		WorkDir:    work,
		Logger:     testsupport.Logger(t),
		Limits:     backend.Limits{StopGrace: 2 * time.Second},
		SessionMap: filepath.Join(dir, "sessions.json"),
		Env: append([]string{
			fakeagent.EnvEnable + "=1",
			fakeagent.EnvLog + "=" + f.logPath,
			fakeagent.EnvState + "=" + state,
			// A -race binary otherwise sleeps 1 s at exit.
			"GORACE=atexit_sleep_ms=0",
		}, env...),
	}
	return opts, f
}

// entries returns what the fake agent(s) logged, in order.
func (f *fake) entries() []fakeagent.LogEntry {
	f.t.Helper()
	return testsupport.ReadJSONLines[fakeagent.LogEntry](f.t, f.logPath)
}

// find returns the entries of one method ("permission" for the answers).
func (f *fake) find(method string) []fakeagent.LogEntry {
	var out []fakeagent.LogEntry
	for _, e := range f.entries() {
		if e.Method == method {
			out = append(out, e)
		}
	}
	return out
}

// outcomes lists the permission answers the fake got, in order.
func (f *fake) outcomes() []string {
	var out []string
	for _, e := range f.find("permission") {
		out = append(out, e.Outcome)
	}
	return out
}

// waitOutcomes waits until the fake logged n permission answers (the log
// line is written after the answer arrives, which may be after the turn).
func (f *fake) waitOutcomes(n int) []string {
	f.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		got := f.outcomes()
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (f *fake) pids() []int {
	var out []int
	seen := map[int]bool{}
	for _, e := range f.entries() {
		if !seen[e.PID] {
			seen[e.PID] = true
			out = append(out, e.PID)
		}
	}
	return out
}

// testHost is the Host of these tests. Its questions fail unless the test
// answers them (only the elicit scenarios ask).
type testHost = testsupport.Host

func newHost(mode string) *testHost {
	h := testsupport.NewHost(mode)
	h.OnAsk = func(context.Context, *testHost, session.InputRequest) (session.Answer, error) {
		return session.Answer{}, errors.New("a question this test does not answer")
	}
	return h
}

// newAgent makes an Agent closed at the end of the test.
func newAgent(t *testing.T, opts acp.Options) *acp.Agent {
	t.Helper()
	a, err := acp.New(opts)
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

// shape lists the events as short strings: "delta:Hello", "message:…",
// "start:ID:name", "end:ID:ok|failed|denied", "usage:in/out",
// "think:text", "plan:status,status".
func shape(events []session.Event) []string {
	var out []string
	for _, e := range events {
		switch v := e.(type) {
		case session.Delta:
			out = append(out, "delta:"+v.Content)
		case session.Message:
			out = append(out, "message:"+v.Content)
		case session.ToolStart:
			out = append(out, "start:"+v.ToolCallID+":"+v.ToolName)
		case session.ToolEnd:
			status := "failed"
			switch {
			case v.Denied:
				status = "denied"
			case v.Success:
				status = "ok"
			}
			out = append(out, "end:"+v.ToolCallID+":"+status)
		case session.Reasoning:
			out = append(out, "think:"+v.Content)
		case session.Plan:
			var st []string
			for _, e := range v.Entries {
				st = append(st, e.Status)
			}
			out = append(out, "plan:"+strings.Join(st, ","))
		case session.Usage:
			out = append(out, fmt.Sprintf("usage:%d/%d", deref(v.InputTokens), deref(v.OutputTokens)))
		default:
			out = append(out, fmt.Sprintf("%T", e))
		}
	}
	return out
}

func deref(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
