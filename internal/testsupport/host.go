package testsupport

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/session"
)

// Host is a session.Host for a backend's tests: it records the events, the
// permission requests and the questions, and decides permissions from its
// mode as the relay does (plan denies, any other mode allows).
type Host struct {
	// OnEmit, when set, is called with each event once it is recorded.
	OnEmit func(h *Host, e session.Event)
	// OnAsk answers the questions; nil: Ask waits until its ctx ends.
	OnAsk func(ctx context.Context, h *Host, req session.InputRequest) (session.Answer, error)

	mu      sync.Mutex
	mode    string
	events  []session.Event
	perms   []session.PermissionRequest
	asks    []session.InputRequest
	changed chan struct{} // closed and replaced at each record
}

var _ session.Host = (*Host)(nil)

// NewHost returns a Host in mode ("plan", "act", …).
func NewHost(mode string) *Host {
	return &Host{mode: mode, changed: make(chan struct{})}
}

func (h *Host) signalLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

func (h *Host) Emit(e session.Event) {
	h.mu.Lock()
	h.events = append(h.events, e)
	hook := h.OnEmit
	h.signalLocked()
	h.mu.Unlock()
	if hook != nil {
		hook(h, e)
	}
}

func (h *Host) Mode() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mode
}

// SetMode changes the mode, for the permission requests from now on.
func (h *Host) SetMode(m string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mode = m
}

func (h *Host) Permission(ctx context.Context, req session.PermissionRequest) session.Decision {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.perms = append(h.perms, req)
	h.signalLocked()
	if h.mode == "plan" {
		return session.Decision{Allow: false, Reason: session.PlanDenialReason}
	}
	return session.Decision{Allow: true}
}

func (h *Host) Ask(ctx context.Context, req session.InputRequest) (session.Answer, error) {
	h.mu.Lock()
	h.asks = append(h.asks, req)
	ask := h.OnAsk
	h.signalLocked()
	h.mu.Unlock()
	if ask == nil {
		<-ctx.Done()
		return session.Answer{}, ctx.Err()
	}
	return ask(ctx, h, req)
}

// Events returns the events so far.
func (h *Host) Events() []session.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]session.Event(nil), h.events...)
}

// Since returns the events after the first n.
func (h *Host) Since(n int) []session.Event {
	return h.Events()[n:]
}

// Permissions returns the permission requests so far.
func (h *Host) Permissions() []session.PermissionRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]session.PermissionRequest(nil), h.perms...)
}

// Asks returns the questions so far.
func (h *Host) Asks() []session.InputRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]session.InputRequest(nil), h.asks...)
}

// WaitFor waits up to within until cond holds over the events so far, and
// fails the test, listing them, if it does not.
func (h *Host) WaitFor(t testing.TB, within time.Duration, what string, cond func(events []session.Event) bool) {
	t.Helper()
	deadline := time.After(within)
	for {
		h.mu.Lock()
		ok := cond(h.events)
		ch := h.changed
		h.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; events:\n%s", what, Describe(h.Events()))
		}
	}
}

// Describe lists events for a test's message, one a line: its type, then
// its JSON.
func Describe(events []session.Event) string {
	var b strings.Builder
	for _, e := range events {
		raw, _ := json.Marshal(e)
		fmt.Fprintf(&b, "%T%s\n", e, raw)
	}
	return b.String()
}

// Text is the concatenation of the deltas among events.
func Text(events []session.Event) string {
	var b strings.Builder
	for _, e := range events {
		if d, ok := e.(session.Delta); ok {
			b.WriteString(d.Content)
		}
	}
	return b.String()
}

// OfType returns the events of type T, in order.
func OfType[T session.Event](events []session.Event) []T {
	var out []T
	for _, e := range events {
		if v, ok := e.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// Open opens the conversation's session on a, waiting up to within, and
// fails the test if it cannot.
func Open(t testing.TB, within time.Duration, a session.Agent, conv string, opts session.OpenOptions, h session.Host) session.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	s, err := a.Open(ctx, conv, opts, h)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// Run runs a turn of prompt on s, for up to within.
func Run(t testing.TB, within time.Duration, s session.Session, prompt string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return s.Run(ctx, session.Turn{Prompt: prompt})
}
