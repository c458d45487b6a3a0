package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
)

const wait = relaytest.Timeout

// ---- a fake agent the test steps through channels ----

// fakeAgent hands every Run to the test as a fakeTurn; the test emits events
// through its Host and ends it with finish. Cancelling the turn's context
// makes Run return ctx.Err() at once, like a well-behaved backend.
type fakeAgent struct {
	turns chan *fakeTurn

	mu      sync.Mutex
	opens   []openCall
	closes  []string
	openErr error
	onClose func(host session.Host) // called by Session.Close (say, to emit a Shutdown)
	// onRun, if set, is called as Run begins, and onTaken by nextTurn
	// with each turn it takes, once it has decided whether that is the
	// turn that runs: a test holds the relay at a point until a turn is
	// offered, or taken.
	onRun, onTaken func(ft *fakeTurn)
}

// hooks returns onRun and onTaken.
func (a *fakeAgent) hooks() (onRun, onTaken func(ft *fakeTurn)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.onRun, a.onTaken
}

type openCall struct {
	ConversationID string
	Opts           session.OpenOptions
}

func newFakeAgent() *fakeAgent { return &fakeAgent{turns: make(chan *fakeTurn)} }

func (a *fakeAgent) Name() string { return "fake" }

func (a *fakeAgent) Open(ctx context.Context, id string, opts session.OpenOptions, host session.Host) (session.Session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.opens = append(a.opens, openCall{id, opts})
	if a.openErr != nil {
		return nil, a.openErr
	}
	return &fakeSession{agent: a, id: id, host: host}, nil
}

func (a *fakeAgent) Close() error { return nil }

func (a *fakeAgent) openCalls() []openCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]openCall(nil), a.opens...)
}

func (a *fakeAgent) closeCalls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.closes...)
}

// nextTurn waits for the next Run.
func (a *fakeAgent) nextTurn(t testing.TB) *fakeTurn {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case ft := <-a.turns:
			cancelled := ft.Ctx.Err() != nil
			if _, onTaken := a.hooks(); onTaken != nil {
				onTaken(ft)
			}
			if cancelled {
				// A turn the relay cancelled while Run offered it (Run
				// picks at random between the offer and its ending
				// context): Run returns the context's error either
				// way, and the test wants the turn that runs (a fenced
				// send's turn came back for the send after it).
				continue
			}
			return ft
		case <-timeout:
			t.Fatalf("the agent was not asked to run a turn within %s", wait)
			return nil
		}
	}
}

// nextTurnFor is nextTurn for the turn of prompt: turns of other prompts
// are passed over. A send whose start was lost was offered to the agent
// too, and its context may end only after the test has sent again; taken
// for the new turn, it would be finished in its place.
func (a *fakeAgent) nextTurnFor(t testing.TB, prompt string) *fakeTurn {
	t.Helper()
	for {
		if ft := a.nextTurn(t); ft.Turn.Prompt == prompt {
			return ft
		}
	}
}

type fakeSession struct {
	agent *fakeAgent
	id    string
	host  session.Host
}

type fakeTurn struct {
	ID   string
	Turn session.Turn
	Host session.Host
	Ctx  context.Context
	end  chan error
	ran  chan error // Run's return value
}

func (s *fakeSession) Run(ctx context.Context, turn session.Turn) error {
	ft := &fakeTurn{ID: s.id, Turn: turn, Host: s.host, Ctx: ctx, end: make(chan error, 1), ran: make(chan error, 1)}
	if onRun, _ := s.agent.hooks(); onRun != nil {
		onRun(ft)
	}
	err := func() error {
		select {
		case s.agent.turns <- ft:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case err := <-ft.end:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}()
	ft.ran <- err
	return err
}

func (s *fakeSession) Close(ctx context.Context) error {
	s.agent.mu.Lock()
	s.agent.closes = append(s.agent.closes, s.id)
	onClose := s.agent.onClose
	s.agent.mu.Unlock()
	if onClose != nil {
		onClose(s.host)
	}
	return nil
}

func (ft *fakeTurn) finish(err error) { ft.end <- err }

func (ft *fakeTurn) delta(id, text string) {
	ft.Host.Emit(session.Delta{MessageID: id, Content: text})
}

// waitRan waits for Run to return and gives its error.
func (ft *fakeTurn) waitRan(t testing.TB) error {
	t.Helper()
	select {
	case err := <-ft.ran:
		return err
	case <-time.After(wait):
		t.Fatalf("Run did not return within %s", wait)
		return nil
	}
}

// ask calls Host.Ask on its own goroutine; the outcome arrives on the channel.
type askResult struct {
	answer session.Answer
	err    error
}

func (ft *fakeTurn) ask(req session.InputRequest) <-chan askResult {
	ch := make(chan askResult, 1)
	go func() {
		a, err := ft.Host.Ask(ft.Ctx, req)
		ch <- askResult{a, err}
	}()
	return ch
}

func waitAsk(t testing.TB, ch <-chan askResult) askResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(wait):
		t.Fatalf("Ask did not return within %s", wait)
		return askResult{}
	}
}

func notYet(t testing.TB, ch <-chan askResult, d time.Duration) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("Ask returned early: %+v", r)
	case <-time.After(d):
	}
}

// ---- logs ----

// logRecorder is a slog.Handler that keeps every record, with attributes
// rendered, so tests can look for a message (and for what must not be
// logged).
type logRecorder struct {
	mu    sync.Mutex
	lines []string
	attrs []slog.Attr
	ch    chan string
	// hold, if set, is called with each line before it is kept, on the
	// logging goroutine: a test holds the relay at the point it logs.
	hold func(line string)
}

// holdAt sets logRecorder.hold.
func (h *logRecorder) holdAt(hold func(line string)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hold = hold
}

func newLogRecorder() *logRecorder { return &logRecorder{ch: make(chan string, 1024)} }

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	line := b.String()
	h.mu.Lock()
	hold := h.hold
	h.mu.Unlock()
	if hold != nil {
		hold(line)
	}
	h.mu.Lock()
	h.lines = append(h.lines, line)
	h.mu.Unlock()
	select {
	case h.ch <- line:
	default:
	}
	return nil
}

func (h *logRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logForward{h, attrs}
}

func (h *logRecorder) WithGroup(string) slog.Handler { return h }

// logForward adds attributes to a shared recorder.
type logForward struct {
	root  *logRecorder
	attrs []slog.Attr
}

func (f *logForward) Enabled(ctx context.Context, l slog.Level) bool { return true }
func (f *logForward) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(f.attrs...)
	return f.root.Handle(ctx, r)
}
func (f *logForward) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logForward{f.root, append(append([]slog.Attr(nil), f.attrs...), attrs...)}
}
func (f *logForward) WithGroup(string) slog.Handler { return f }

func (h *logRecorder) logger() *slog.Logger { return slog.New(h) }

func (h *logRecorder) all() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.lines, "\n")
}

// waitLog waits for a log line containing substr.
func (h *logRecorder) waitLog(t testing.TB, substr string) string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		for _, l := range h.lines {
			if strings.Contains(l, substr) {
				h.mu.Unlock()
				return l
			}
		}
		h.mu.Unlock()
		select {
		case <-h.ch:
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("no log line containing %q; logs:\n%s", substr, h.all())
	return ""
}

// ---- stores ----

// gateStore holds every Write until the test lets it through (when gated).
type gateStore struct {
	history.Store
	mu     sync.Mutex
	gate   chan struct{} // nil: open
	writes int
	events int
}

func (s *gateStore) Write(ctx context.Context, b history.Batch) error {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		<-gate
	}
	s.mu.Lock()
	s.writes++
	s.events += len(b.Events)
	s.mu.Unlock()
	return s.Store.Write(ctx, b)
}

func (s *gateStore) close() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate = make(chan struct{})
	return s.gate
}

func (s *gateStore) open(gate chan struct{}) {
	s.mu.Lock()
	s.gate = nil
	s.mu.Unlock()
	close(gate)
}

func (s *gateStore) counts() (writes, events int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes, s.events
}

// storedFrames returns the stored frames of a conversation.
func storedFrames(t testing.TB, st history.Store, id string) []history.Event {
	t.Helper()
	var out []history.Event
	if err := st.Events(context.Background(), id, 0, func(e history.Event) error {
		out = append(out, e)
		return nil
	}); err != nil {
		t.Fatalf("Events: %v", err)
	}
	return out
}

// ---- relay and client helpers ----

type env struct {
	t     *testing.T
	agent *fakeAgent
	store *gateStore
	logs  *logRecorder
	srv   *relaytest.Server
}

// start runs a relay over a fake agent and a gateable memory store, and
// checks at the end that none of the relay's goroutines is left.
func start(t *testing.T, mod func(*relay.Config)) *env {
	t.Helper()
	checkNoLeaks(t)
	e := &env{t: t, agent: newFakeAgent(), store: &gateStore{Store: history.NewMemory()}, logs: newLogRecorder()}
	cfg := relay.Config{Agent: e.agent, Store: e.store, Logger: e.logs.logger()}
	if mod != nil {
		mod(&cfg)
	}
	e.srv = relaytest.Start(t, cfg)
	return e
}

func (e *env) dial() *relaytest.Client { return e.srv.Dial(e.t) }

// subscribe subscribes a new client to id and returns it with the
// copilot:subscribed frame.
func (e *env) subscribe(id string) (*relaytest.Client, relaytest.Frame) {
	e.t.Helper()
	cl := e.dial()
	cl.Send("copilot:subscribe", map[string]any{"conversationId": id})
	return cl, cl.Expect("copilot:subscribed")
}

// startTurn sends a prompt from cl and returns the turn the agent got; the
// frames cl received up to and including copilot:user_message are checked.
func (e *env) startTurn(cl *relaytest.Client, id, prompt string, extra map[string]any) *fakeTurn {
	e.t.Helper()
	data := map[string]any{"conversationId": id, "prompt": prompt}
	for k, v := range extra {
		data[k] = v
	}
	cl.Send("copilot:send", data)
	cl.WaitFor("copilot:user_message", nil)
	return e.agent.nextTurn(e.t)
}

// sync makes sure everything the relay queued for cl before now has been
// received: a ping's pong comes after it.
func sync_(t testing.TB, cl *relaytest.Client) []relaytest.Frame {
	t.Helper()
	cl.Send("ping", nil)
	_, skipped := cl.WaitForCollect("pong", nil)
	return skipped
}

// expectQuiet checks that nothing but the pong arrives.
func expectQuiet(t testing.TB, cl *relaytest.Client) {
	t.Helper()
	if got := sync_(t, cl); len(got) > 0 {
		t.Fatalf("unexpected frames: %s", framesString(got))
	}
}

func framesString(fs []relaytest.Frame) string {
	var b strings.Builder
	for _, f := range fs {
		b.Write(f.Raw)
		b.WriteByte('\n')
	}
	return b.String()
}

// dataMap decodes a frame's data into a map for checks of exact shapes.
func dataMap(t testing.TB, f relaytest.Frame) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(f.Data, &m); err != nil {
		t.Fatalf("decode %s: %v", f.Raw, err)
	}
	return m
}

// keys checks that data has exactly these keys.
func keys(t testing.TB, f relaytest.Frame, want ...string) map[string]any {
	t.Helper()
	m := dataMap(t, f)
	if len(m) != len(want) {
		t.Errorf("%s: keys %v, want exactly %v", f.Raw, mapKeys(m), want)
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("%s: no key %q", f.Raw, k)
		}
	}
	return m
}

func mapKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// ---- goroutine leaks ----

// parallelTests names the tests that run beside others (parallel): their
// leak checks count only the goroutines they started themselves.
var parallelTests sync.Map // test name → struct{}

// parallel runs t beside the package's other parallel tests (t.Parallel),
// for a test that waits more than it computes (leases, a NATS cluster):
// its leak checks, and those of its subtests, then look only at the
// goroutines it started.
func parallel(t *testing.T) {
	parallelTests.Store(t.Name(), struct{}{})
	t.Parallel()
}

// runsInParallel reports whether t or a test above it called parallel.
func runsInParallel(t *testing.T) bool {
	for name := t.Name(); ; {
		if _, ok := parallelTests.Load(name); ok {
			return true
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return false
		}
		name = name[:i]
	}
}

// leakLabel is the key of the profiler label that marks the goroutines a
// parallel test started.
const leakLabel = "leakcheck"

// checkNoLeaks fails the test if, after its cleanups, a goroutine running
// code of the relay package is left. A test alone in the process (not
// parallel) counts every such goroutine. A parallel test cannot tell the
// others' goroutines from its own by their stacks, so it labels its own
// goroutine here (pprof labels: every goroutine it, and those it starts,
// start from now on carries the label) and counts only the labelled ones.
// That misses a leak of a goroutine started by a timer (time.AfterFunc
// runs its function on a goroutine without labels); the same code runs in
// the serial tests, which see it.
func checkNoLeaks(t *testing.T) {
	label := ""
	if runsInParallel(t) {
		label = t.Name()
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(leakLabel, label)))
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(wait)
		for {
			leaked := relayGoroutines(label)
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%d relay goroutine(s) left after the test:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// relayGoroutines returns the stacks of the goroutines running code of the
// relay package, other than tests; with a label, only those that carry it.
func relayGoroutines(label string) []string {
	if label != "" {
		return labelledRelayGoroutines(label)
	}
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		s := string(g)
		if isRelayStack(s) {
			out = append(out, s)
		}
	}
	return out
}

func isRelayStack(s string) bool {
	return strings.Contains(s, "pilotdesk/relay.") && !strings.Contains(s, "testing.tRunner")
}

// labelledRelayGoroutines reads the goroutine profile, where goroutines of
// the same stack and labels are one record ("N @ pcs", "# labels: {…}",
// then a "#\tpc func+off file:line" line a frame), and returns the records
// of relay code that carry label.
func labelledRelayGoroutines(label string) []string {
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		return []string{"reading the goroutine profile: " + err.Error()}
	}
	mark := fmt.Sprintf("# labels: {%q:%q", leakLabel, label) // the only label these tests set
	var out []string
	for rec := range strings.SplitSeq(b.String(), "\n\n") {
		if isRelayStack(rec) && (strings.Contains(rec, mark+"}") || strings.Contains(rec, mark+",")) {
			out = append(out, rec)
		}
	}
	return out
}

var errBoom = errors.New("boom")
