package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestDeleteConversation: File → Delete conversation… is offered for a
// conversation the relay knows, asks first in words that say what goes,
// and deletes it on the relay: it leaves the list, another client's list
// no longer has it, and the window shows a new conversation in its place.
// There was no way to delete a conversation from any front end: the list
// and its worktrees only grew.
func TestDeleteConversation(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.frame()
	if !h.w.deleteItem.Disabled {
		t.Fatal("Delete conversation… is offered for a conversation the relay does not know")
	}
	h.send("markdown")
	h.waitFor("the turn", func() bool { return completedTurns(h) == 1 })
	h.frame()
	id := h.w.current
	if h.w.deleteItem.Disabled {
		t.Fatal("Delete conversation… is not offered for a conversation on the relay")
	}

	// Cancel deletes nothing.
	h.w.confirmDelete()
	c := h.w.deleting
	if c == nil || c.id != id {
		t.Fatal("no confirmation")
	}
	if !strings.HasPrefix(c.text, "Delete “") || !strings.Contains(c.text, "cannot be undone") {
		t.Fatalf("the confirmation says %q", c.text)
	}
	c.dlg.Hide()
	h.frame()
	if h.w.current != id || !h.w.store.Has(id) {
		t.Fatal("Cancel deleted the conversation")
	}

	h.w.confirmDelete()
	test.Tap(h.w.deleting.ok)
	h.waitFor("the conversation to go", func() bool {
		h.frame()
		return !h.w.store.Has(id) && h.w.current != id
	})
	for _, e := range h.w.sidebar.entries {
		if e.ID == id {
			t.Fatalf("the deleted conversation is still listed: %+v", h.w.sidebar.entries)
		}
	}
	other := h.srv.Dial(t)
	other.Send("copilot:list", nil)
	list := other.WaitFor("copilot:conversations", nil)
	if strings.Contains(string(list.Raw), id) {
		t.Fatalf("the relay still lists it: %s", list.Raw)
	}
	if h.w.view.Exists && h.w.view.OnRelay {
		t.Fatalf("after the delete the window shows %+v, want a new conversation", h.w.view)
	}
	h.send("markdown")
	h.waitFor("a turn in the new conversation", func() bool { return completedTurns(h) == 1 })
}

// TestDeleteConversationViewer: a viewer's window does not offer it (the
// relay would refuse: only the owner deletes).
func TestDeleteConversationViewer(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("markdown")
	h.waitFor("the turn", func() bool { return completedTurns(h) == 1 })
	h.w.role = protocol.RoleViewer
	h.w.showDeleteItem()
	if !h.w.deleteItem.Disabled {
		t.Fatal("a viewer's window offers Delete conversation…")
	}
}
