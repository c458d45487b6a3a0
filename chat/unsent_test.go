package chat

import (
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// unsent delivers what the client says of a prompt the relay did not get
// (docs/protocol.md, Lost sends).
func (h *harness) unsent(conv, prompt string) {
	h.conn.events <- client.Event{Type: client.TypeUnsent, Data: &client.Unsent{ConversationID: conv, ClientID: "k1", Prompt: prompt}}
}

// TestRawUnsentBackOnTheLine: a prompt the relay did not get is said to
// be so and put back on the empty prompt line; it goes again only when
// the user presses Enter.
func TestRawUnsentBackOnTheLine(t *testing.T) {
	h := startREPL(t, rawTerm, nil)
	h.subscribed(nil)
	h.waitScreen("the act prompt", func(s string) bool { return lastLine(s) == "act>" })
	h.typeIn("deploy the fix\r")
	if s := h.nextCall("send"); s.prompt != "deploy the fix" {
		t.Fatalf("send = %+v", s)
	}
	h.subscribed(nil) // the client reconnected
	h.unsent(testConv, "deploy the fix")
	const said = "The relay did not get your message (the connection dropped before it arrived): it is back on the prompt line; press Enter to send it again."
	h.waitScreen("the note, and the prompt back on the line", func(s string) bool {
		return strings.Contains(strings.ReplaceAll(s, "\n", ""), said) && lastLine(s) == "act> deploy the fix"
	})
	h.noCall()
	h.typeIn("\r")
	if s := h.nextCall("send"); s.prompt != "deploy the fix" {
		t.Fatalf("send again = %+v", s)
	}
}

// TestRawUnsentArrivedLate: a prompt given back whose echo came after all
// is taken off the line (when it is still there as given back) and said
// to be sent.
func TestRawUnsentArrivedLate(t *testing.T) {
	h := startREPL(t, rawTerm, nil)
	h.subscribed(nil)
	h.typeIn("deploy the fix\r")
	h.nextCall("send")
	h.subscribed(nil)
	h.unsent(testConv, "deploy the fix")
	h.waitScreen("the prompt back on the line", func(s string) bool {
		return strings.Contains(s, "back on the prompt") && lastLine(s) == "act> deploy the fix"
	})
	h.emit(protocol.TypeUserMessage, map[string]any{"messageId": "u1", "content": "deploy the fix", "mode": "act", "clientId": "k1"})
	h.conn.events <- client.Event{Type: client.TypeUnsent, Data: &client.Unsent{ConversationID: testConv, ClientID: "k1", Prompt: "deploy the fix", Arrived: true}}
	h.waitScreen("the note", func(s string) bool {
		return strings.Contains(strings.ReplaceAll(s, "\n", ""), "Your message reached the relay after all: it was sent.")
	})
	h.typeIn("x")
	h.waitScreen("the line emptied of it", func(s string) bool { return lastLine(s) == "act> x" })
	h.noCall()
}

// TestPlainUnsentPrinted: piped, the prompt is printed as not sent, never
// sent again, and the REPL does not wait for its turn: the next line goes.
func TestPlainUnsentPrinted(t *testing.T) {
	h := startREPL(t, plain, nil)
	h.subscribed(nil)
	h.typeIn("deploy the fix\n")
	if s := h.nextCall("send"); s.prompt != "deploy the fix" {
		t.Fatalf("send = %+v", s)
	}
	h.typeIn("next step\n")
	h.subscribed(nil)
	h.unsent(testConv, "deploy the fix")
	h.waitFor("The relay did not get your message (the connection dropped before it arrived). Not sent: deploy the fix")
	if s := h.nextCall("send"); s.prompt != "next step" {
		t.Fatalf("the next line: %+v, want next step (the lost prompt never again)", s)
	}
	h.emit(protocol.TypeUserMessage, map[string]any{"messageId": "u2", "content": "next step", "mode": "act"})
	h.idle(protocol.StatusCompleted)
	h.noCall()
}

// TestRawRefusedBackOnTheLine: a prompt the relay refused goes back on an
// empty prompt line under the relay's reason, and is not sent again until
// the user presses Enter.
func TestRawRefusedBackOnTheLine(t *testing.T) {
	h := startREPL(t, rawTerm, nil)
	h.subscribed(nil)
	h.waitScreen("the act prompt", func(s string) bool { return lastLine(s) == "act>" })
	h.typeIn("deploy the fix\r")
	h.nextCall("send")
	refusal := &protocol.Error{Code: protocol.CodeInvalidField, Type: protocol.TypeSend, ConversationID: testConv, Message: "the folder does not exist", ClientID: "k1"}
	h.conn.events <- client.Event{Type: protocol.TypeError, Data: refusal}
	h.conn.events <- client.Event{Type: client.TypeRefused, Data: &client.Refused{ConversationID: testConv, ClientID: "k1", Prompt: "deploy the fix", Err: refusal}}
	h.waitScreen("the reason, and the prompt back on the line", func(s string) bool {
		flat := strings.ReplaceAll(s, "\n", "")
		return strings.Contains(flat, "Not sent: the folder does not exist") && strings.Contains(flat, "back on the prompt line") && lastLine(s) == "act> deploy the fix"
	})
	h.noCall()
	h.typeIn("\r")
	if s := h.nextCall("send"); s.prompt != "deploy the fix" {
		t.Fatalf("send again = %+v", s)
	}
}
