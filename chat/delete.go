package chat

import (
	"context"

	"github.com/pilotdesk/pilotdesk/conversation"
)

// /delete deletes the conversation on the relay (copilot:delete) after a
// y/N confirmation in the words the window asks with
// (conversation.DeleteText); the relay's copilot:deleted then starts a new
// conversation here (events.go), as it does when another device deletes
// it. Only the owner's token may delete: the relay refuses the others.

// deleter is a Conn that can delete a conversation (the client's can).
type deleter interface {
	DeleteConversation(ctx context.Context, conversationID string) error
}

// askDelete asks for a y/N confirmation before deleting the conversation.
func (r *repl) askDelete() {
	// Subscribed to, a new conversation is "on the relay" with nothing in
	// it: what it holds says whether there is anything to delete.
	if r.fold == nil || len(r.fold.Rows) == 0 {
		r.note(styleWarn, "Nothing to delete: the relay does not know this conversation yet (it starts with its first prompt).")
		return
	}
	if _, ok := r.conn.(deleter); !ok {
		r.note(styleWarn, "This connection cannot delete conversations.")
		return
	}
	r.note(styleWarn, conversation.DeleteText(r.fold.Title, r.fold.Workspace))
	id := r.conv
	r.askConfirm("Delete? [y/N]", &confirmation{
		yes: func(ctx context.Context) { r.deleteConversation(ctx, id) },
		no:  "Not deleted.",
	})
}

// deleteConversation sends copilot:delete of id, confirmed (askDelete).
func (r *repl) deleteConversation(ctx context.Context, id string) {
	d, ok := r.conn.(deleter)
	if !ok {
		return
	}
	r.request(ctx, "delete", func(c context.Context) error { return d.DeleteConversation(c, id) })
}
