package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/acp"
)

// elicited returns the one answer the fake logged for its elicitation:
// the action (or "error: …") and the answer's content.
func (f *fake) elicited(t *testing.T) (string, map[string]any) {
	t.Helper()
	got := f.find("elicitation")
	if len(got) != 1 {
		t.Fatalf("the fake logged %d elicitation answers, want 1: %+v", len(got), got)
	}
	var res struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if len(got[0].Params) > 0 {
		if err := json.Unmarshal(got[0].Params, &res); err != nil {
			t.Fatalf("answer %s: %v", got[0].Params, err)
		}
	}
	return got[0].Outcome, res.Content
}

// answers returns an OnAsk that gives the answers in order (one per
// question asked) and fails the test past the last.
func answers(t *testing.T, list ...session.Answer) func(context.Context, *testHost, session.InputRequest) (session.Answer, error) {
	var mu sync.Mutex
	return func(_ context.Context, _ *testHost, req session.InputRequest) (session.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(list) == 0 {
			t.Errorf("an unexpected question: %+v", req)
			return session.Answer{}, session.ErrRejected
		}
		a := list[0]
		list = list[1:]
		return a, nil
	}
}

func text(s string) session.Answer { return session.Answer{Text: s, WasFreeform: true, Index: -1} }

// TestElicitationFieldTypes: each field type of a form becomes the relay's
// question of its kind, and the answer goes back to the agent as the
// field's value, of the schema's type. An answer that does not fit the
// schema is asked again, saying why.
func TestElicitationFieldTypes(t *testing.T) {
	free, fixed := true, false
	cases := []struct {
		kind    string
		answers []session.Answer
		// the questions the relay gets
		inputType string
		choices   []string
		freeform  *bool
		hint      string // the second question starts with it
		want      any
	}{
		{kind: "enum", answers: []session.Answer{{Text: "green", Index: 1}}, inputType: "choice",
			choices: []string{"red", "green", "blue"}, freeform: &fixed, want: "green"},
		{kind: "oneof", answers: []session.Answer{{Text: "Large", Index: 1}}, inputType: "choice",
			choices: []string{"Small", "Large"}, freeform: &fixed, want: "l"},
		{kind: "suggest", answers: []session.Answer{text("feature/x")}, inputType: "choice",
			choices: []string{"main", "dev"}, freeform: &free, want: "feature/x"},
		{kind: "bool", answers: []session.Answer{{Text: "approve", Index: 0}}, inputType: "approval",
			choices: []string{"Yes", "No"}, want: true},
		{kind: "string", answers: []session.Answer{text("x"), text("pilot")}, inputType: "text",
			hint: "The answer is 1 characters long; at least 2 are needed.", want: "pilot"},
		{kind: "int", answers: []session.Answer{text("three"), text("9"), text("3")}, inputType: "text",
			hint: "“three” is not a number.", want: float64(3)},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			opts, f := newFake(t)
			a := newAgent(t, opts)
			h := newHost("act")
			h.OnAsk = answers(t, c.answers...)
			s := open(t, a, "c1", session.OpenOptions{}, h)
			if err := run(t, s, "elicit "+c.kind); err != nil {
				t.Fatalf("Run: %v", err)
			}
			action, content := f.elicited(t)
			if action != "accept" {
				t.Fatalf("the agent got %q, want accept", action)
			}
			var field string
			for k := range content {
				field = k
			}
			if len(content) != 1 || !reflect.DeepEqual(content[field], c.want) {
				t.Errorf("content = %v, want one field of %v", content, c.want)
			}
			asks := h.Asks()
			if len(asks) != len(c.answers) {
				t.Fatalf("%d questions, want %d: %+v", len(asks), len(c.answers), asks)
			}
			q := asks[0]
			if q.InputType != c.inputType || !reflect.DeepEqual(q.Choices, c.choices) || !reflect.DeepEqual(q.AllowFreeform, c.freeform) {
				t.Errorf("question = %+v, want type %s, choices %q, freeform %v", q, c.inputType, c.choices, c.freeform)
			}
			if c.hint != "" && !strings.HasPrefix(asks[1].Question, c.hint) {
				t.Errorf("second question %q does not start with %q", asks[1].Question, c.hint)
			}
			// The text before the question is a message of its own, and
			// what comes after it another.
			msgs := testsupport.OfType[session.Message](h.Events())
			if len(msgs) != 2 || msgs[0].Content != "Let me ask." || !strings.HasPrefix(msgs[1].Content, "answer: ") {
				t.Errorf("messages = %+v", msgs)
			}
		})
	}
}

// TestElicitationForm: a form of several fields is one question after
// another, in the schema's order, answered to the agent as one response.
func TestElicitationForm(t *testing.T) {
	opts, f := newFake(t)
	a := newAgent(t, opts)
	h := newHost("act")
	h.OnAsk = answers(t, text("pilotdesk"), session.Answer{Text: "blue", Index: 2}, text("4"), text("go, CLI"))
	s := open(t, a, "c1", session.OpenOptions{}, h)
	if err := run(t, s, "elicit form"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	action, content := f.elicited(t)
	want := map[string]any{"name": "pilotdesk", "colour": "blue", "retries": float64(4), "tags": []any{"go", "cli"}}
	if action != "accept" || !reflect.DeepEqual(content, want) {
		t.Errorf("answer %s %v, want accept %v", action, content, want)
	}
	var qs []string
	for _, q := range h.Asks() {
		qs = append(qs, q.Question)
	}
	wantQ := []string{
		"Set up the project.\n\n(1 of 4) Name: the project's name",
		"Set up the project.\n\n(2 of 4) Colour",
		"Set up the project.\n\n(3 of 4) Retries (a whole number)",
		"Set up the project.\n\n(4 of 4) Tags (one or more of go, web, cli, separated by commas)",
	}
	if !reflect.DeepEqual(qs, wantQ) {
		t.Errorf("questions:\n%q\nwant\n%q", qs, wantQ)
	}
}

// TestElicitationDeclineAndCancel: a rejected question declines the whole
// form (no further field is asked); one the relay timed out is cancelled
// and the turn goes on; an aborted turn cancels it.
func TestElicitationDeclineAndCancel(t *testing.T) {
	t.Run("rejected", func(t *testing.T) {
		opts, f := newFake(t)
		a := newAgent(t, opts)
		h := newHost("act")
		h.OnAsk = func(context.Context, *testHost, session.InputRequest) (session.Answer, error) {
			return session.Answer{Index: -1}, session.ErrRejected
		}
		s := open(t, a, "c1", session.OpenOptions{}, h)
		if err := run(t, s, "elicit form"); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if action, _ := f.elicited(t); action != "decline" {
			t.Errorf("the agent got %q, want decline", action)
		}
		if n := len(h.Asks()); n != 1 {
			t.Errorf("%d questions after a rejection, want 1", n)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		opts, f := newFake(t)
		a := newAgent(t, opts)
		h := newHost("act")
		h.OnAsk = func(context.Context, *testHost, session.InputRequest) (session.Answer, error) {
			return session.Answer{Index: -1}, session.ErrTimeout
		}
		s := open(t, a, "c1", session.OpenOptions{}, h)
		if err := run(t, s, "elicit string"); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if action, _ := f.elicited(t); action != "cancel" {
			t.Errorf("the agent got %q, want cancel", action)
		}
	})
	t.Run("aborted", func(t *testing.T) {
		opts, f := newFake(t)
		a := newAgent(t, opts)
		h := newHost("act")
		asked := make(chan struct{})
		h.OnAsk = func(ctx context.Context, _ *testHost, _ session.InputRequest) (session.Answer, error) {
			close(asked)
			<-ctx.Done()
			return session.Answer{Index: -1}, ctx.Err()
		}
		s := open(t, a, "c1", session.OpenOptions{}, h)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		tctx, abort := context.WithCancel(ctx)
		go func() {
			<-asked
			abort()
		}()
		if err := s.Run(tctx, session.Turn{Prompt: "elicit enum"}); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		deadline := time.Now().Add(wait)
		for len(f.find("elicitation")) == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if action, _ := f.elicited(t); action != "cancel" {
			t.Errorf("the agent got %q, want cancel", action)
		}
		// The session goes on.
		if err := run(t, s, "hello"); err != nil {
			t.Errorf("the next turn: %v", err)
		}
	})
	t.Run("url mode", func(t *testing.T) {
		opts, f := newFake(t)
		a := newAgent(t, opts)
		h := newHost("act")
		s := open(t, a, "c1", session.OpenOptions{}, h)
		if err := run(t, s, "elicit url"); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if action, _ := f.elicited(t); !strings.Contains(action, "form-mode") {
			t.Errorf("the agent got %q, want an error naming form mode", action)
		}
		if n := len(h.Asks()); n != 0 {
			t.Errorf("%d questions for a URL elicitation", n)
		}
	})
}

// TestElicitationAdvertised: initialize offers form-mode elicitation and
// nothing else of it.
func TestElicitationAdvertised(t *testing.T) {
	opts, f := newFake(t)
	a := newAgent(t, opts)
	if err := a.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	var init struct {
		ClientCapabilities struct {
			Elicitation map[string]json.RawMessage `json:"elicitation"`
		} `json:"clientCapabilities"`
	}
	json.Unmarshal(f.find("initialize")[0].Params, &init)
	if _, ok := init.ClientCapabilities.Elicitation["form"]; !ok || len(init.ClientCapabilities.Elicitation) != 1 {
		t.Errorf("elicitation capability = %v, want form only", init.ClientCapabilities.Elicitation)
	}
}

// TestElicitationThroughRelay: the agent's question is the relay's
// copilot:user_input_request, the answer a client sends goes back to the
// agent, and the relay's timeout (copilot:user_input_timeout) cancels it
// while the turn goes on.
func TestElicitationThroughRelay(t *testing.T) {
	opts, f := newFake(t)
	agent, err := acp.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Close() })
	srv := relaytest.Start(t, relay.Config{Agent: agent, Logger: testsupport.Logger(t), InputTimeout: 2 * time.Second})
	cl := srv.Dial(t)
	conv := uuid.NewString()
	ofConv := func(fr relaytest.Frame) bool { return fr.Field("conversationId") == conv }

	cl.Send("copilot:send", map[string]any{"conversationId": conv, "prompt": "elicit enum", "mode": "act"})
	req := cl.WaitFor("copilot:user_input_request", ofConv)
	if req.Field("inputType") != "choice" || req.Field("question") != "Which colour?" {
		t.Errorf("request = %s", req.Raw)
	}
	cl.Send("copilot:user_input_response", map[string]any{"conversationId": conv, "requestId": req.Field("requestId"), "answer": "blue", "index": 2})
	if fr := cl.WaitFor("copilot:idle", ofConv); fr.Field("status") != "completed" {
		t.Errorf("idle = %s", fr.Raw)
	}
	if action, content := f.elicited(t); action != "accept" || content["colour"] != "blue" {
		t.Errorf("the agent got %s %v", action, content)
	}

	cl.Send("copilot:send", map[string]any{"conversationId": conv, "prompt": "elicit string", "mode": "act"})
	cl.WaitFor("copilot:user_input_timeout", ofConv)
	if fr := cl.WaitFor("copilot:idle", ofConv); fr.Field("status") != "completed" {
		t.Errorf("idle after a timeout = %s", fr.Raw)
	}
	if got := f.find("elicitation"); len(got) != 2 || got[1].Outcome != "cancel" {
		t.Errorf("after the timeout the agent got %+v, want cancel", got)
	}

	// Rejected: the agent gets decline, and the relay ends the turn as
	// rejected; the next turn works.
	cl.Send("copilot:send", map[string]any{"conversationId": conv, "prompt": "elicit bool", "mode": "act"})
	req = cl.WaitFor("copilot:user_input_request", ofConv)
	if req.Field("inputType") != "approval" {
		t.Errorf("a boolean is asked as %s", req.Raw)
	}
	cl.Send("copilot:user_input_response", map[string]any{"conversationId": conv, "requestId": req.Field("requestId"), "answer": "reject"})
	if fr := cl.WaitFor("copilot:idle", ofConv); fr.Field("status") != "rejected" {
		t.Errorf("idle after a rejection = %s", fr.Raw)
	}
	deadline := time.Now().Add(wait)
	for len(f.find("elicitation")) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := f.find("elicitation"); len(got) != 3 || got[2].Outcome != "decline" {
		t.Errorf("after the rejection the agent got %+v, want decline", got)
	}
	cl.Send("copilot:send", map[string]any{"conversationId": conv, "prompt": "hello", "mode": "act"})
	if fr := cl.WaitFor("copilot:idle", ofConv); fr.Field("status") != "completed" {
		t.Errorf("the turn after = %s", fr.Raw)
	}
}
