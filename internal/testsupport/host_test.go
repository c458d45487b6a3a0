package testsupport

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/session"
)

func TestHostRecords(t *testing.T) {
	h := NewHost("act")
	var hooked []session.Event
	h.OnEmit = func(hh *Host, e session.Event) {
		if hh != h {
			t.Error("the hook got another host")
		}
		hooked = append(hooked, e)
	}
	h.Emit(session.Delta{Content: "a"})
	h.Emit(session.Delta{Content: "b"})
	if got := h.Events(); len(got) != 2 || got[1] != (session.Delta{Content: "b"}) {
		t.Errorf("events %v", got)
	}
	if got := h.Since(1); len(got) != 1 || got[0] != (session.Delta{Content: "b"}) {
		t.Errorf("since 1: %v", got)
	}
	if len(hooked) != 2 {
		t.Errorf("the hook saw %d events", len(hooked))
	}
	// Events is a copy.
	h.Events()[0] = session.Delta{Content: "changed"}
	if h.Events()[0] != (session.Delta{Content: "a"}) {
		t.Error("Events shares its slice")
	}
}

// TestHostPermission: plan denies with the relay's reason, other modes
// allow; every request is recorded.
func TestHostPermission(t *testing.T) {
	h := NewHost("plan")
	if h.Mode() != "plan" {
		t.Fatalf("mode %q", h.Mode())
	}
	d := h.Permission(context.Background(), session.PermissionRequest{ToolCallID: "1"})
	if d.Allow || d.Reason != session.PlanDenialReason {
		t.Errorf("plan: %+v", d)
	}
	h.SetMode("act")
	if d := h.Permission(context.Background(), session.PermissionRequest{ToolCallID: "2"}); !d.Allow {
		t.Errorf("act: %+v", d)
	}
	if p := h.Permissions(); len(p) != 2 || p[0].ToolCallID != "1" || p[1].ToolCallID != "2" {
		t.Errorf("permissions %+v", p)
	}
}

func TestHostAsk(t *testing.T) {
	h := NewHost("act")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	// No OnAsk: nobody answers until the turn ends.
	if _, err := h.Ask(ctx, session.InputRequest{Question: "one?"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("unanswered: %v", err)
	}
	h.OnAsk = func(_ context.Context, hh *Host, req session.InputRequest) (session.Answer, error) {
		return session.Answer{Text: "yes to " + req.Question}, nil
	}
	if a, err := h.Ask(context.Background(), session.InputRequest{Question: "two?"}); err != nil || a.Text != "yes to two?" {
		t.Errorf("answered: %+v, %v", a, err)
	}
	if asks := h.Asks(); len(asks) != 2 || asks[1].Question != "two?" {
		t.Errorf("asks %+v", asks)
	}
}

func TestHostWaitFor(t *testing.T) {
	h := NewHost("act")
	go func() {
		time.Sleep(10 * time.Millisecond)
		h.Emit(session.Delta{Content: "x"})
		h.Emit(session.Delta{Content: "done"})
	}()
	h.WaitFor(t, 10*time.Second, "done", func(ev []session.Event) bool {
		return len(ev) > 0 && ev[len(ev)-1] == session.Event(session.Delta{Content: "done"})
	})

	f := &fakeTB{}
	f.run(func(tb testing.TB) {
		h.WaitFor(tb, 20*time.Millisecond, "never", func([]session.Event) bool { return false })
	})
	if !strings.HasPrefix(f.fatal, "timed out waiting for never; events:\nsession.Delta{") {
		t.Errorf("fatal %q", f.fatal)
	}
}

func TestDescribe(t *testing.T) {
	got := Describe([]session.Event{session.Delta{Content: "hi"}, session.ToolEnd{ToolCallID: "t1", Success: true}})
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "session.Delta{") || !strings.Contains(lines[0], `"hi"`) ||
		!strings.HasPrefix(lines[1], "session.ToolEnd{") || !strings.Contains(lines[1], `"t1"`) {
		t.Errorf("Describe:\n%s", got)
	}
}

func TestTextAndOfType(t *testing.T) {
	events := []session.Event{
		session.Delta{Content: "Hel"},
		session.ToolEnd{ToolCallID: "t1"},
		session.Delta{Content: "lo"},
		session.Message{Content: "Hello"},
		session.ToolEnd{ToolCallID: "t2"},
	}
	if got := Text(events); got != "Hello" {
		t.Errorf("Text = %q", got)
	}
	if ends := OfType[session.ToolEnd](events); len(ends) != 2 || ends[0].ToolCallID != "t1" || ends[1].ToolCallID != "t2" {
		t.Errorf("OfType = %+v", ends)
	}
	if msgs := OfType[session.Usage](events); msgs != nil {
		t.Errorf("OfType of none = %+v", msgs)
	}
}

// agent is a session.Agent whose sessions run a turn until its ctx ends or
// the prompt is "ok".
type agent struct{ openErr error }

func (a agent) Name() string { return "test" }
func (a agent) Close() error { return nil }
func (a agent) Open(ctx context.Context, conv string, opts session.OpenOptions, h session.Host) (session.Session, error) {
	if a.openErr != nil {
		return nil, a.openErr
	}
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("no deadline")
	}
	return turnSession{}, nil
}

type turnSession struct{ session.Session }

func (turnSession) Run(ctx context.Context, turn session.Turn) error {
	if turn.Prompt == "ok" {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func TestOpenAndRun(t *testing.T) {
	s := Open(t, time.Second, agent{}, "c1", session.OpenOptions{}, NewHost("act"))
	if err := Run(t, time.Second, s, "ok"); err != nil {
		t.Errorf("Run = %v", err)
	}
	if err := Run(t, 20*time.Millisecond, s, "hang"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run past its time = %v", err)
	}
	f := &fakeTB{}
	f.run(func(tb testing.TB) {
		Open(tb, time.Second, agent{openErr: errors.New("no agent")}, "c1", session.OpenOptions{}, NewHost("act"))
	})
	if f.fatal != "Open: no agent" {
		t.Errorf("fatal %q", f.fatal)
	}
}
