package chat

import (
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// Where the conversation's agent changed (the relay restarted with
// another), the terminal prints the fold's note before the prompt, also
// for its own prompt, whose echo prints nothing else; the same agent again
// prints nothing.
func TestAgentChangeNote(t *testing.T) {
	h := startREPL(t, plain, nil)
	h.subscribed(nil)
	h.emit(protocol.TypeUserMessage, map[string]any{"messageId": "u1", "content": "first", "mode": "act", "agent": "Copilot CLI"})
	h.idle(protocol.StatusCompleted)
	h.emit(protocol.TypeUserMessage, map[string]any{"messageId": "u2", "content": "second", "mode": "act", "agent": "Copilot CLI"})
	h.idle(protocol.StatusCompleted)
	h.waitFor("act> second")

	h.typeIn("third\n")
	h.nextCall("send")
	h.waitFor("act> third")
	h.emit(protocol.TypeUserMessage, map[string]any{"messageId": "u3", "content": "third", "mode": "act", "agent": "OpenCode (ACP)"})
	h.delta("On it.")
	h.idle(protocol.StatusCompleted)
	h.waitFor("The agent changed from Copilot CLI to OpenCode (ACP).\nOn it.")
	if n := strings.Count(h.out.text(), "The agent changed"); n != 1 {
		t.Fatalf("%d notes of a change, want 1:\n%s", n, h.out.text())
	}
}
