package chat

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// These tests run the REPL in-process against a real relay (relaytest)
// with the scripted agent, through the shared client. The binary itself is
// tested in a terminal in cli/chat_terminal_test.go.

const relayScript = `{"turns": [
  {"match": "approve", "steps": [
    {"delta": "I will migrate the database. "},
    {"input": {"type": "approval", "prompt": "Run the migration?", "choices": ["Run it", "Skip"]}},
    {"delta": "Migrated ({{answer}})."}
  ]},
  {"match": "choose", "steps": [
    {"input": {"type": "choice", "prompt": "Which environment?", "choices": ["staging", "prod", "qa"]}},
    {"delta": "Deploying to {{answer}} (index {{index}})."}
  ]},
  {"match": "slow", "steps": [
    {"delta": "Step one. "},
    {"tool": {"name": "bash", "arguments": {"command": "make deploy"}, "result": "deployed"}},
    {"delta": "The tool was {{tool}}."}
  ]},
  {"steps": [{"delta": "Echo: {{prompt}}"}]}
]}`

type relayHarness struct {
	t    *testing.T
	srv  *relaytest.Server
	out  *output
	in   *io.PipeWriter
	done chan error
	mark int
}

func startRelayREPL(t *testing.T) *relayHarness {
	t.Helper()
	return startRelayREPLOf(t, func(a session.Agent) session.Agent { return a })
}

// startRelayREPLOf is startRelayREPL with the scripted agent wrapped.
func startRelayREPLOf(t *testing.T, wrap func(session.Agent) session.Agent) *relayHarness {
	t.Helper()
	sc, err := script.Parse("test script", []byte(relayScript))
	if err != nil {
		t.Fatal(err)
	}
	return startREPLOn(t, relay.Config{Agent: wrap(script.New(sc))})
}

// startREPLOn is a REPL on a relay started with cfg (its token t0ken),
// stopped with the test.
func startREPLOn(t *testing.T, cfg relay.Config) *relayHarness {
	t.Helper()
	cfg.Token = "t0ken"
	srv := relaytest.Start(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := client.Config{URL: srv.URL, Token: srv.Token}.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	h := &relayHarness{t: t, srv: srv, out: &output{}, in: pw, done: make(chan error, 1)}
	go func() {
		h.done <- Run(ctx, Config{Conn: conn, In: pr, Out: h.out, NewID: func() string { return testConv }})
	}()
	t.Cleanup(func() {
		cancel()
		pw.Close()
		select {
		case <-h.done:
		case <-time.After(relaytest.Timeout):
			t.Error("Run did not return")
		}
		conn.Close()
	})
	return h
}

func (h *relayHarness) waitFor(s string) {
	h.t.Helper()
	deadline := time.Now().Add(relaytest.Timeout)
	for {
		text := h.out.text()
		if i := strings.Index(text[min(h.mark, len(text)):], s); i >= 0 {
			h.mark += i + len(s)
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the output never showed %q; it is:\n%s", s, text)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *relayHarness) typeIn(s string) {
	if _, err := io.WriteString(h.in, s); err != nil {
		h.t.Fatal(err)
	}
}

// TestRelayRejectionKeepsPartialText: an approval rejected here ends the
// turn with the notice; the relay kept the partial text in the history.
func TestRelayRejectionKeepsPartialText(t *testing.T) {
	h := startRelayREPL(t)
	h.typeIn("please approve this\n")
	h.waitFor("act> please approve this\nI will migrate the database. \nRun the migration?\n  a/1) Run it\n  r/2) Skip\n")
	h.typeIn("maybe\n")
	h.waitFor("Please answer a/1 or r/2.")
	h.typeIn("r\n")
	h.waitFor("Rejected. Agent response cancelled.\nusage: none reported for this turn\n")
	if strings.Contains(h.out.text(), "Migrated") {
		t.Errorf("the turn went on after the rejection:\n%s", h.out.text())
	}
	// The history: another client replays the conversation.
	w := h.srv.Dial(t)
	since := int64(0)
	w.Send(protocol.TypeSubscribe, protocol.Subscribe{ConversationID: testConv, SinceSeq: &since})
	_, replay := w.WaitForCollect(protocol.TypeSubscribed, nil)
	var text strings.Builder
	status := ""
	for _, f := range replay {
		switch f.Type {
		case protocol.TypeDelta:
			text.WriteString(f.Field("content").(string))
		case protocol.TypeIdle:
			status = f.Field("status").(string)
		}
	}
	if text.String() != "I will migrate the database. " || status != protocol.StatusRejected {
		t.Errorf("history: text %q, status %q; want the partial text and rejected", text.String(), status)
	}
	// Back at the prompt.
	h.typeIn("hello\n")
	h.waitFor("act> hello\nEcho: hello\n")
}

// TestRelayAnsweredByAnotherClient: the window (another client of the
// relay) answers the question; the prompt here closes with a note and the
// line typed next is a prompt, not an answer.
func TestRelayAnsweredByAnotherClient(t *testing.T) {
	h := startRelayREPL(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	window, err := client.Config{URL: h.srv.URL, Token: h.srv.Token}.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer window.Close()
	if err := window.Subscribe(ctx, testConv, 0); err != nil {
		t.Fatal(err)
	}
	h.typeIn("choose one\n")
	h.waitFor("Which environment?\n  1) staging\n  2) prod\n  3) qa\n  r) Reject\n")
	var req *protocol.UserInputRequest
	for req == nil {
		select {
		case ev := <-window.Events():
			if d, ok := ev.Data.(*protocol.UserInputRequest); ok {
				req = d
			}
		case <-time.After(relaytest.Timeout):
			t.Fatal("the window never got the question")
		}
	}
	i := 2
	if err := window.Answer(ctx, testConv, req.RequestID, "qa", false, &i); err != nil {
		t.Fatal(err)
	}
	h.waitFor("\"Which environment?\" was answered from another client on this device.\nDeploying to qa (index 2).\n")
	h.typeIn("2\n")
	h.waitFor("act> 2\nEcho: 2\n")
}

// TestRelayMidStreamPlan: /plan while the turn streams makes the relay deny
// the next tool call of that same turn. The tool call waits for the test
// (heldTools), not for a pause of the script that a busy machine could
// let pass before the /plan came.
func TestRelayMidStreamPlan(t *testing.T) {
	release := make(chan struct{})
	h := startRelayREPLOf(t, func(a session.Agent) session.Agent { return heldTools{a, release} })
	h.typeIn("slow please\n")
	h.waitFor("Step one. ")
	h.typeIn("/plan\n")
	h.waitFor("Switched to Plan: every tool call is denied from the next tool call.")
	close(release)
	h.waitFor("⚙ bash make deploy — denied by plan")
	h.waitFor("The tool was denied.\nusage: none reported for this turn\n")
	h.typeIn("hi\n")
	h.waitFor("plan> hi\nEcho: hi")
}

// heldTools is an agent whose tool calls ask for permission once release
// is closed (or their turn ends).
type heldTools struct {
	session.Agent
	release <-chan struct{}
}

func (a heldTools) Open(ctx context.Context, id string, opts session.OpenOptions, host session.Host) (session.Session, error) {
	return a.Agent.Open(ctx, id, opts, heldHost{host, a.release})
}

type heldHost struct {
	session.Host
	release <-chan struct{}
}

func (h heldHost) Permission(ctx context.Context, req session.PermissionRequest) session.Decision {
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return h.Host.Permission(ctx, req)
}
