package script

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/session"
)

// fakeHost is the relay's side of a session for tests: it records every
// event and request, decides permissions from its mode like the relay does,
// and answers questions with a function the test provides.
type fakeHost struct {
	mu          sync.Mutex
	mode        string
	events      []session.Event
	permissions []session.PermissionRequest
	asks        []session.InputRequest

	// answer answers Ask; nil answers every question with an error.
	answer func(ctx context.Context, req session.InputRequest) (session.Answer, error)
	// onEmit, when set, sees every event as it is emitted.
	onEmit func(session.Event)
}

func newFakeHost(mode string) *fakeHost { return &fakeHost{mode: mode} }

func (h *fakeHost) Emit(e session.Event) {
	h.mu.Lock()
	h.events = append(h.events, e)
	onEmit := h.onEmit
	h.mu.Unlock()
	if onEmit != nil {
		onEmit(e)
	}
}

func (h *fakeHost) Mode() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mode
}

func (h *fakeHost) setMode(m string) {
	h.mu.Lock()
	h.mode = m
	h.mu.Unlock()
}

func (h *fakeHost) Permission(_ context.Context, req session.PermissionRequest) session.Decision {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.permissions = append(h.permissions, req)
	if h.mode == "plan" {
		return session.Decision{Allow: false, Reason: session.PlanDenialReason}
	}
	return session.Decision{Allow: true}
}

func (h *fakeHost) Ask(ctx context.Context, req session.InputRequest) (session.Answer, error) {
	h.mu.Lock()
	h.asks = append(h.asks, req)
	answer := h.answer
	h.mu.Unlock()
	if answer == nil {
		return session.Answer{}, session.ErrTimeout
	}
	return answer(ctx, req)
}

func (h *fakeHost) recorded() ([]session.Event, []session.PermissionRequest, []session.InputRequest) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]session.Event(nil), h.events...),
		append([]session.PermissionRequest(nil), h.permissions...),
		append([]session.InputRequest(nil), h.asks...)
}

// sleepRecorder replaces the agent's real pause: it returns at once (or with
// the context's error) and adds up the time the script asked for.
type sleepRecorder struct {
	mu    sync.Mutex
	total time.Duration
	count int
}

func (r *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.total += d
	r.count++
	r.mu.Unlock()
	return ctx.Err()
}

func (r *sleepRecorder) slept() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// mustParse parses src or fails the test.
func mustParse(t testing.TB, src string) *Script {
	t.Helper()
	s, err := Parse("test.json", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

// open parses src and opens a session on host whose pauses are recorded,
// not waited for.
func open(t testing.TB, src string, host session.Host) (session.Session, *sleepRecorder) {
	t.Helper()
	rec := &sleepRecorder{}
	a := New(mustParse(t, src)).(*Agent)
	a.sleep = rec.sleep
	sess, err := a.Open(context.Background(), "conv-1", session.OpenOptions{}, host)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return sess, rec
}

// run plays one turn with a generous deadline.
func run(t testing.TB, sess session.Session, prompt string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return sess.Run(ctx, session.Turn{Prompt: prompt})
}

// deltasOf returns the contents of the Delta events, in order.
func deltasOf(events []session.Event) []string {
	var out []string
	for _, e := range events {
		if d, ok := e.(session.Delta); ok {
			out = append(out, d.Content)
		}
	}
	return out
}

// messagesOf returns the Message events.
func messagesOf(events []session.Event) []session.Message {
	var out []session.Message
	for _, e := range events {
		if m, ok := e.(session.Message); ok {
			out = append(out, m)
		}
	}
	return out
}
