package chat

import (
	"context"
	"strings"

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
	r.confirmDelete = r.conv
	r.note(styleWarn, "Delete? [y/N]")
}

// confirmDeletion reads the answer to askDelete.
func (r *repl) confirmDeletion(ctx context.Context, line string) {
	id := r.confirmDelete
	r.confirmDelete = ""
	r.echo("", line)
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
	default:
		r.note(styleDim, "Not deleted.")
		return
	}
	d, ok := r.conn.(deleter)
	if !ok {
		return
	}
	if err := r.send(ctx, func(c context.Context) error { return d.DeleteConversation(c, id) }); err != nil {
		r.note(styleError, "Could not delete: "+err.Error())
	}
}
