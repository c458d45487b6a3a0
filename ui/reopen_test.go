package ui

import (
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestReopenLeavesWhatTheUserStarted: the window goes back to the
// conversation it showed last (else the latest) on its first list, from
// the new conversation it started in, but not once the user typed there
// or opened another; an empty list leaves the new conversation.
func TestReopenLeavesWhatTheUserStarted(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("markdown")
	h.waitFor("the turn", func() bool { return completedTurns(h) == 1 })
	older := h.w.current
	list := &protocol.Conversations{Conversations: []protocol.ConversationInfo{{ConversationID: "latest"}, {ConversationID: older}}}
	h.w.opts.Reopen, h.w.opts.LastShown = true, older
	start := func() string {
		h.w.newConversation()
		h.w.startReopen()
		return h.w.current
	}

	// Nothing on the relay: the new conversation stays.
	fresh := start()
	h.w.reopen(&protocol.Conversations{})
	if h.w.current != fresh {
		t.Fatal("an empty list moved the window")
	}
	// A draft typed while the list was on its way: it stays.
	fresh = start()
	h.w.composer.SetText("half a prompt")
	h.w.reopen(list)
	if h.w.current != fresh || h.w.composer.Text != "half a prompt" {
		t.Fatal("the window left a draft for the last conversation")
	}
	h.w.composer.SetText("")
	// Another conversation opened meanwhile: it stays.
	start()
	h.w.newConversation()
	opened := h.w.current
	h.w.reopen(list)
	if h.w.current != opened {
		t.Fatal("the window left the conversation the user opened")
	}
	// Else the last one shown, else the latest; once only.
	start()
	h.w.reopen(list)
	if h.w.current != older {
		t.Fatalf("the window shows %q, want the last shown %q", h.w.current, older)
	}
	h.w.opts.LastShown = "deleted since"
	start()
	h.w.reopen(list)
	if h.w.current != "latest" {
		t.Fatalf("the window shows %q, want the latest", h.w.current)
	}
	again := start()
	h.w.reopen(list)
	h.w.newConversation()
	h.w.reopen(list)
	if h.w.current == "latest" || h.w.current == again {
		t.Fatal("a later list moved the window again")
	}
}
