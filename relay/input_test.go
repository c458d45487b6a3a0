package relay_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
)

func boolp(b bool) *bool { return &b }

// The request's shape, and allowFreeform's default per input type.
func TestInputRequestShape(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("in")
	ft := e.startTurn(cl, "in", "ask", nil)
	cases := []struct {
		req       session.InputRequest
		keys      []string
		allow     bool
		inputType any
	}{
		{session.InputRequest{Question: "Name?"}, []string{"conversationId", "seq", "requestId", "question", "allowFreeform", "expiresAt"}, true, nil},
		{session.InputRequest{Question: "Env?", Choices: []string{"a", "b"}, AllowFreeform: boolp(false)}, []string{"conversationId", "seq", "requestId", "question", "choices", "allowFreeform", "expiresAt"}, false, nil},
		{session.InputRequest{Question: "Why?", InputType: "text"}, []string{"conversationId", "seq", "requestId", "question", "allowFreeform", "inputType", "expiresAt"}, true, "text"},
		{session.InputRequest{Question: "Run?", InputType: "approval", Choices: []string{"Run", "Skip"}}, []string{"conversationId", "seq", "requestId", "question", "choices", "allowFreeform", "inputType", "expiresAt"}, false, "approval"},
		{session.InputRequest{Question: "Pick", InputType: "choice", Choices: []string{"x", "y", "z"}}, []string{"conversationId", "seq", "requestId", "question", "choices", "allowFreeform", "inputType", "expiresAt"}, false, "choice"},
		{session.InputRequest{Question: "Pick or type", InputType: "choice", Choices: []string{"x"}, AllowFreeform: boolp(true)}, []string{"conversationId", "seq", "requestId", "question", "choices", "allowFreeform", "inputType", "expiresAt"}, true, "choice"},
	}
	seen := map[any]bool{}
	for _, tc := range cases {
		res := ft.ask(tc.req)
		f := cl.Expect("copilot:user_input_request")
		m := keys(t, f, tc.keys...)
		if m["question"] != tc.req.Question || m["allowFreeform"] != tc.allow || m["inputType"] != tc.inputType || m["conversationId"] != "in" {
			t.Errorf("request %s for %+v", f.Raw, tc.req)
		}
		if seen[m["requestId"]] || m["requestId"] == "" {
			t.Errorf("requestId %v is not unique", m["requestId"])
		}
		seen[m["requestId"]] = true
		answer := "x"
		if tc.req.InputType != "approval" && len(tc.req.Choices) > 0 {
			answer = tc.req.Choices[0]
		}
		cl.Send("copilot:user_input_response", map[string]any{"conversationId": "in", "requestId": m["requestId"], "answer": answer})
		if tc.req.InputType == "approval" {
			// "x" is not an approval answer; approve instead.
			if m := dataMap(t, cl.Expect("error")); m["code"] != protocol.CodeInvalidAnswer {
				t.Fatalf("approval answered x: %v", m)
			}
			cl.Send("copilot:user_input_response", map[string]any{"conversationId": "in", "requestId": m["requestId"], "answer": "approve"})
		}
		closed := cl.Expect("copilot:user_input_closed")
		if cm := keys(t, closed, "conversationId", "seq", "requestId", "reason", "answeredBy"); cm["reason"] != "answered" || cm["requestId"] != m["requestId"] {
			t.Errorf("closed %s", closed.Raw)
		}
		if r := waitAsk(t, res); r.err != nil {
			t.Errorf("Ask: %v", r.err)
		}
	}
	ft.finish(nil)
	cl.Expect("copilot:idle")
}

// The answer Ask returns, for each kind of response.
func TestInputAnswers(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("ans")
	other, _ := e.subscribe("ans")
	ft := e.startTurn(cl, "ans", "ask", nil)
	other.Expect("copilot:user_message")
	cases := []struct {
		name string
		req  session.InputRequest
		resp map[string]any
		want session.Answer
	}{
		{"free text", session.InputRequest{Question: "q"}, map[string]any{"answer": "hello"}, session.Answer{Text: "hello", WasFreeform: true, Index: -1}},
		{"choice by text", session.InputRequest{Question: "q", Choices: []string{"staging", "prod"}}, map[string]any{"answer": "prod", "wasFreeform": false}, session.Answer{Text: "prod", Index: 1}},
		{"choice with index", session.InputRequest{Question: "q", InputType: "choice", Choices: []string{"a", "b", "a"}}, map[string]any{"answer": "a", "index": 2}, session.Answer{Text: "a", Index: 2}},
		{"freeform beside choices", session.InputRequest{Question: "q", Choices: []string{"a"}, AllowFreeform: boolp(true)}, map[string]any{"answer": "c", "wasFreeform": true}, session.Answer{Text: "c", WasFreeform: true, Index: -1}},
		{"approve", session.InputRequest{Question: "q", InputType: "approval", Choices: []string{"Yes", "No"}}, map[string]any{"answer": "approve"}, session.Answer{Text: "approve", Index: 0}},
		{"text", session.InputRequest{Question: "q", InputType: "text"}, map[string]any{"answer": "because"}, session.Answer{Text: "because", WasFreeform: true, Index: -1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := ft.ask(tc.req)
			req := cl.Expect("copilot:user_input_request")
			other.Expect("copilot:user_input_request")
			resp := map[string]any{"conversationId": "ans", "requestId": req.Field("requestId")}
			for k, v := range tc.resp {
				resp[k] = v
			}
			cl.Send("copilot:user_input_response", resp)
			r := waitAsk(t, res)
			if r.err != nil || r.answer != tc.want {
				t.Fatalf("Ask = %+v, %v; want %+v", r.answer, r.err, tc.want)
			}
			// Every window is told, so it closes its modal.
			for _, c := range []*relaytest.Client{cl, other} {
				if f := c.Expect("copilot:user_input_closed"); f.Field("reason") != "answered" {
					t.Fatalf("closed %s", f.Raw)
				}
			}
		})
	}
	ft.finish(nil)
}

// Invalid answers get invalid_answer and the request stays open; unknown or
// settled requestIds are ignored.
func TestInputInvalidAnswers(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("inv")
	ft := e.startTurn(cl, "inv", "ask", nil)
	cases := []struct {
		name   string
		req    session.InputRequest
		bad    []string
		good   string
		reject bool
	}{
		{"empty", session.InputRequest{Question: "q"}, []string{"", "   "}, "fine", false},
		{"approval", session.InputRequest{Question: "q", InputType: "approval", Choices: []string{"Go", "Stop"}}, []string{"yes", "Go", "Approve", "1"}, "approve", false},
		{"choice", session.InputRequest{Question: "q", InputType: "choice", Choices: []string{"a", "b"}}, []string{"c", "A", ""}, "b", false},
		{"ask_user with choices, no freeform", session.InputRequest{Question: "q", Choices: []string{"a", "b"}, AllowFreeform: boolp(false)}, []string{"z"}, "a", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := ft.ask(tc.req)
			id := cl.Expect("copilot:user_input_request").Field("requestId")
			for _, bad := range tc.bad {
				cl.Send("copilot:user_input_response", map[string]any{"conversationId": "inv", "requestId": id, "answer": bad})
				f := cl.Expect("error")
				if m := keys(t, f, "code", "message", "type", "conversationId"); m["code"] != protocol.CodeInvalidAnswer {
					t.Fatalf("answer %q: %s", bad, f.Raw)
				}
			}
			notYet(t, res, 50*time.Millisecond) // still open
			// An unknown requestId is ignored.
			cl.Send("copilot:user_input_response", map[string]any{"conversationId": "inv", "requestId": "nope", "answer": tc.good})
			cl.Send("copilot:user_input_response", map[string]any{"conversationId": "nowhere", "requestId": id, "answer": tc.good})
			expectQuiet(t, cl)
			cl.Send("copilot:user_input_response", map[string]any{"conversationId": "inv", "requestId": id, "answer": tc.good})
			if r := waitAsk(t, res); r.err != nil || r.answer.Text != tc.good {
				t.Fatalf("Ask = %+v, %v", r.answer, r.err)
			}
			cl.Expect("copilot:user_input_closed")
			// Already settled: ignored, nothing changes.
			cl.Send("copilot:user_input_response", map[string]any{"conversationId": "inv", "requestId": id, "answer": tc.good})
			cl.Send("copilot:user_input_response", map[string]any{"conversationId": "inv", "requestId": id, "answer": "", "rejected": true})
			expectQuiet(t, cl)
		})
	}
	if ft.Ctx.Err() != nil {
		t.Fatal("the stream was cancelled")
	}
	ft.finish(nil)
	cl.Expect("copilot:idle")
}

// approval/choice without choices: copilot:error, no request, Ask fails with
// ErrInvalidRequest, the turn goes on.
func TestInputWithoutChoices(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("nc")
	ft := e.startTurn(cl, "nc", "ask", nil)
	for _, typ := range []string{"approval", "choice", "bogus"} {
		r := waitAsk(t, ft.ask(session.InputRequest{Question: "q", InputType: typ}))
		if !errors.Is(r.err, session.ErrInvalidRequest) || r.answer.Index != -1 {
			t.Fatalf("%s without choices: %+v, %v", typ, r.answer, r.err)
		}
		f := cl.Expect("copilot:error")
		if m := keys(t, f, "conversationId", "seq", "message"); m["message"] == "" {
			t.Fatal("empty error message")
		}
	}
	ft.delta("m", "went on")
	cl.Expect("copilot:delta")
	ft.finish(nil)
	if s := cl.Expect("copilot:idle").Field("status"); s != "completed" {
		t.Fatalf("status %v", s)
	}
}

// One open request per conversation; the next is sent only when the first
// is settled. A late subscriber sees the open one as pendingInput.
func TestInputQueue(t *testing.T) {
	e := start(t, nil)
	cl, _ := e.subscribe("q")
	ft := e.startTurn(cl, "q", "ask", nil)
	first := ft.ask(session.InputRequest{Question: "first"})
	req1 := cl.Expect("copilot:user_input_request")
	second := ft.ask(session.InputRequest{Question: "second", InputType: "text"})
	third := ft.ask(session.InputRequest{Question: "third"})
	expectQuiet(t, cl) // the second waits
	notYet(t, second, 20*time.Millisecond)

	late := e.dial()
	late.Send("copilot:subscribe", map[string]any{"conversationId": "q"})
	sub := late.Expect("copilot:subscribed")
	pending, ok := sub.Field("pendingInput").(map[string]any)
	if !ok || pending["requestId"] != req1.Field("requestId") || pending["question"] != "first" || pending["allowFreeform"] != true {
		t.Fatalf("subscribed %s, want pendingInput = the first request", sub.Raw)
	}

	cl.Send("copilot:user_input_response", map[string]any{"conversationId": "q", "requestId": req1.Field("requestId"), "answer": "one"})
	if r := waitAsk(t, first); r.answer.Text != "one" {
		t.Fatalf("first: %+v %v", r.answer, r.err)
	}
	cl.Expect("copilot:user_input_closed")
	late.Expect("copilot:user_input_closed")
	// The other two were asked at the same time: either may come first,
	// but only one at a time.
	waiting := map[string]<-chan askResult{"second": second, "third": third}
	for range 2 {
		req := cl.Expect("copilot:user_input_request")
		late.Expect("copilot:user_input_request")
		q := req.Field("question").(string)
		ch := waiting[q]
		if ch == nil {
			t.Fatalf("unexpected request %s", req.Raw)
		}
		delete(waiting, q)
		expectQuiet(t, cl)
		late.Send("copilot:user_input_response", map[string]any{"conversationId": "q", "requestId": req.Field("requestId"), "answer": "re " + q})
		if r := waitAsk(t, ch); r.answer.Text != "re "+q {
			t.Fatalf("%s: %+v %v", q, r.answer, r.err)
		}
		cl.Expect("copilot:user_input_closed")
		late.Expect("copilot:user_input_closed")
	}
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "q"})
	if sub := cl.Expect("copilot:subscribed"); sub.Field("pendingInput") != nil {
		t.Fatalf("pendingInput after all were answered: %s", sub.Raw)
	}
	ft.finish(nil)
}

// rejected: true, or the answer reject to an approval: closed (rejected), Ask
// fails with ErrRejected, the turn is cancelled and ends rejected, keeping
// its partial text; queued requests are dropped.
func TestInputReject(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  session.InputRequest
		resp map[string]any
	}{
		{"rejected flag", session.InputRequest{Question: "q", InputType: "text"}, map[string]any{"answer": "", "rejected": true}},
		{"approval reject", session.InputRequest{Question: "q", InputType: "approval", Choices: []string{"Do", "Don't"}}, map[string]any{"answer": "reject"}},
		{"choice rejected", session.InputRequest{Question: "q", InputType: "choice", Choices: []string{"a", "b"}}, map[string]any{"answer": "r", "rejected": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t, nil)
			cl, _ := e.subscribe("rj")
			ft := e.startTurn(cl, "rj", "ask", nil)
			ft.delta("m", "partial ")
			ft.delta("m", "text")
			res := ft.ask(tc.req)
			req := cl.WaitFor("copilot:user_input_request", nil)
			queued := ft.ask(session.InputRequest{Question: "never shown"})
			expectQuiet(t, cl)
			resp := map[string]any{"conversationId": "rj", "requestId": req.Field("requestId")}
			for k, v := range tc.resp {
				resp[k] = v
			}
			cl.Send("copilot:user_input_response", resp)
			if r := waitAsk(t, res); !errors.Is(r.err, session.ErrRejected) {
				t.Fatalf("Ask: %+v, %v; want ErrRejected", r.answer, r.err)
			}
			if r := waitAsk(t, queued); r.err == nil {
				t.Fatal("the queued request was answered")
			}
			if err := ft.waitRan(t); !errors.Is(err, context.Canceled) {
				t.Fatalf("Run returned %v; the turn was not cancelled", err)
			}
			closed := cl.Expect("copilot:user_input_closed")
			if closed.Field("reason") != "rejected" {
				t.Fatalf("closed %s", closed.Raw)
			}
			msg := cl.Expect("copilot:message")
			if msg.Field("content") != "partial text" {
				t.Fatalf("partial message %s", msg.Raw)
			}
			if s := cl.Expect("copilot:idle").Field("status"); s != "rejected" {
				t.Fatalf("status %v", s)
			}
			expectQuiet(t, cl) // the queued request never went out
		})
	}
}

// Abort rejects the open and queued requests, clears their timers and tells
// the clients (closed, reason aborted).
func TestInputAbort(t *testing.T) {
	timers := relaytest.NewInputTimers()
	e := start(t, func(c *relay.Config) { c.InputTimeout = time.Minute; c.InputTimer = timers.Start })
	cl, _ := e.subscribe("ia")
	ft := e.startTurn(cl, "ia", "ask", nil)
	open := ft.ask(session.InputRequest{Question: "open"})
	req := cl.Expect("copilot:user_input_request")
	queued := ft.ask(session.InputRequest{Question: "queued"})
	expectQuiet(t, cl)
	notYet(t, queued, 20*time.Millisecond)
	cl.Send("copilot:abort", map[string]any{"conversationId": "ia"})
	for _, ch := range []<-chan askResult{open, queued} {
		if r := waitAsk(t, ch); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("Ask after abort: %v", r.err)
		}
	}
	closed := cl.Expect("copilot:user_input_closed")
	if closed.Field("reason") != "aborted" || closed.Field("requestId") != req.Field("requestId") {
		t.Fatalf("closed %s", closed.Raw)
	}
	if s := cl.Expect("copilot:idle").Field("status"); s != "aborted" {
		t.Fatalf("status %v", s)
	}
	// The timer was cleared: no timeout message later.
	if n := timers.Armed(); n != 0 {
		t.Fatalf("%d question timer(s) still armed after the abort", n)
	}
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "ia"})
	if s := cl.Expect("copilot:subscribed"); s.Field("pendingInput") != nil || s.Field("streaming") != false {
		t.Fatalf("subscribed after abort %s", s.Raw)
	}
}

// No answer in time: copilot:user_input_timeout first, then Ask fails with
// ErrTimeout and the stream goes on. An answered request never times out.
func TestInputTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	timers := relaytest.NewInputTimers()
	e := start(t, func(c *relay.Config) { c.InputTimeout = timeout; c.InputTimer = timers.Start })
	cl, _ := e.subscribe("to")
	ft := e.startTurn(cl, "to", "ask", nil)
	res := ft.ask(session.InputRequest{Question: "Env?", Choices: []string{"a", "b"}})
	req := cl.Expect("copilot:user_input_request")
	next := ft.ask(session.InputRequest{Question: "next"})
	if d := timers.Expire(t); d != timeout {
		t.Fatalf("the question's timer was started with %v, want the relay's InputTimeout %v", d, timeout)
	}
	f := cl.Expect("copilot:user_input_timeout")
	m := keys(t, f, "conversationId", "seq", "requestId", "question", "choices", "allowFreeform")
	if m["requestId"] != req.Field("requestId") || m["question"] != "Env?" || m["allowFreeform"] != true {
		t.Fatalf("timeout %s", f.Raw)
	}
	if r := waitAsk(t, res); !errors.Is(r.err, session.ErrTimeout) {
		t.Fatalf("Ask after timeout: %v", r.err)
	}
	// The queue moves on, and the stream goes on.
	req2 := cl.Expect("copilot:user_input_request")
	if req2.Field("question") != "next" {
		t.Fatalf("next %s", req2.Raw)
	}
	cl.Send("copilot:user_input_response", map[string]any{"conversationId": "to", "requestId": req2.Field("requestId"), "answer": "quick"})
	if r := waitAsk(t, next); r.err != nil {
		t.Fatal(r.err)
	}
	cl.Expect("copilot:user_input_closed")
	if n := timers.Armed(); n != 0 { // answered in time: no timeout message
		t.Fatalf("%d question timer(s) still armed after the answer", n)
	}
	if ft.Ctx.Err() != nil {
		t.Fatal("the timeout cancelled the stream")
	}
	ft.delta("m", "after")
	cl.Expect("copilot:delta")
	ft.finish(nil)
	if s := cl.Expect("copilot:idle").Field("status"); s != "completed" {
		t.Fatalf("status %v", s)
	}
}

// A negative InputTimeout waits forever.
func TestInputNoTimeout(t *testing.T) {
	e := start(t, func(c *relay.Config) { c.InputTimeout = -1 })
	cl, _ := e.subscribe("nt")
	ft := e.startTurn(cl, "nt", "ask", nil)
	res := ft.ask(session.InputRequest{Question: "q"})
	cl.Expect("copilot:user_input_request")
	notYet(t, res, 300*time.Millisecond)
	expectQuiet(t, cl)
	cl.Send("copilot:abort", map[string]any{"conversationId": "nt"})
	waitAsk(t, res)
}
