package ui

import (
	"context"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/ui/store"
)

// File → Delete conversation… deletes the conversation shown, on the
// relay (copilot:delete), after a confirmation that says what goes and
// what stays (conversation.DeleteText, the terminal's /delete's words).
// Only the owner's token may delete, so the item is enabled only for it,
// and only for a conversation the relay knows. When the relay has deleted
// it (this window's request or another device's), the window opens a new
// conversation in its place (sync, deletedShown).

// deleteLabel is the File menu's item.
const deleteLabel = "Delete conversation…"

// canDelete reports whether the conversation shown may be deleted.
func (w *Window) canDelete() bool {
	return w.client != nil && w.view.Exists && w.view.OnRelay && w.role == protocol.RoleOwner
}

// confirmDelete asks before deleting the conversation shown.
func (w *Window) confirmDelete() {
	if !w.canDelete() || w.modal != nil {
		return
	}
	id := w.current
	c := &confirmation{id: id, text: conversation.DeleteText(w.view.Title, w.store.Workspace(id))}
	text := widget.NewLabel(c.text)
	text.Wrapping = fyne.TextWrapWord
	w.confirmAction(&w.deleting, c, "Delete the conversation?", container.NewVBox(text),
		"Delete", theme.DeleteIcon(), func() { w.deleteConversation(id) }, w.focusComposer)
}

// deleteConversation asks the relay to delete conversation id; its
// copilot:deleted takes it out of the list.
func (w *Window) deleteConversation(id string) {
	w.enqueue(func(ctx context.Context) {
		if err := w.client.DeleteConversation(ctx, id); err != nil {
			w.store.AddNote(id, conversation.NoteError, "Not deleted: "+err.Error())
		}
	})
}

// showDeleteItem enables File → Delete conversation… when the shown
// conversation may be deleted, and changes the menu only when that
// changed.
func (w *Window) showDeleteItem() {
	item := w.deleteItem
	if item == nil {
		return
	}
	if disabled := !w.canDelete(); item.Disabled != disabled {
		item.Disabled = disabled
		w.win.SetMainMenu(w.menu)
	}
}

// deletedShown reports, once, that the conversation shown was on the
// relay and is gone from the store: deleted, here or by another device.
func (w *Window) deletedShown(v store.View) bool {
	if v.ID != w.shownID {
		w.shownID, w.shownOnRelay = v.ID, v.Exists && v.OnRelay
		return false
	}
	gone := w.shownOnRelay && !v.Exists
	w.shownOnRelay = v.Exists && v.OnRelay
	return gone
}
