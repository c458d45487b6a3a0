package chat

import (
	"strings"
	"testing"
)

// /delete deletes the conversation on the relay after a y/N confirmation
// that says what goes: the relay's list no longer has it, and the
// terminal goes on in a new conversation. Before, no front end could
// delete a conversation.
func TestDeleteCommand(t *testing.T) {
	h := startRelayREPL(t)
	h.typeIn("/delete\n")
	h.waitFor("Nothing to delete: the relay does not know this conversation yet")
	h.typeIn("hello there\n")
	h.waitFor("Echo: hello there")
	h.typeIn("/delete\n")
	h.waitFor("and its history, on the relay and for every device? This cannot be undone.")
	h.waitFor("Delete? [y/N]")
	h.typeIn("n\n")
	h.waitFor("Not deleted.")
	if !h.listed(testConv) {
		t.Fatal("the conversation is gone after n")
	}
	h.typeIn("/delete\n")
	h.waitFor("Delete? [y/N]")
	h.typeIn("y\n")
	h.waitFor("This conversation was deleted on the relay. Starting a new one.")
	if h.listed(testConv) {
		t.Fatal("the relay still lists the deleted conversation")
	}
}

// listed reports whether the relay's list holds conversation id.
func (h *relayHarness) listed(id string) bool {
	cl := h.srv.Dial(h.t)
	cl.Send("copilot:list", nil)
	return strings.Contains(string(cl.WaitFor("copilot:conversations", nil).Raw), id)
}
