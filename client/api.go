package client

import (
	"context"
	"strings"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// Subscribe follows a conversation: the relay replays its events with
// seq > sinceSeq (0 replays all of it), then sends copilot:subscribed, then
// live events. The subscription is remembered: after a reconnect the client
// renews it from the last seq it delivered. While disconnected it is only
// remembered and the call returns nil.
//
// A resubscription's replay is held until copilot:subscribed, then
// delivered in seq order without what was delivered already (or after a
// Reset, when the relay replaced the history). A first one (sinceSeq 0,
// no history of the conversation held) is delivered as it arrives, in seq
// order: nothing held could be replaced. If the connection drops before
// its copilot:subscribed, the client delivers a Reset and replays it from
// the start.
func (c *Client) Subscribe(ctx context.Context, conversationID string, sinceSeq int64) error {
	c.mu.Lock()
	s := c.sub(conversationID)
	s.lastSeq = max(sinceSeq, 0)
	s.syncing = true
	s.buf = nil
	s.fresh = s.lastSeq == 0 && s.epoch == ""
	epoch := s.epoch
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return nil
	}
	since := max(sinceSeq, 0)
	return c.writeTo(ctx, conn, protocol.TypeSubscribe, protocol.Subscribe{ConversationID: conversationID, SinceSeq: &since, Epoch: epoch})
}

// Unsubscribe stops following a conversation.
func (c *Client) Unsubscribe(ctx context.Context, conversationID string) error {
	c.mu.Lock()
	delete(c.subs, conversationID)
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return nil
	}
	return c.writeTo(ctx, conn, protocol.TypeUnsubscribe, protocol.ConversationRef{ConversationID: conversationID})
}

// LastSeq returns the highest seq delivered for a conversation (0 if none).
func (c *Client) LastSeq(conversationID string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.subs[conversationID]; ok {
		return s.lastSeq
	}
	return 0
}

// Send starts a turn with prompt. mode "" means the relay's default (act);
// model "" the session's model. Sending subscribes this connection to the
// conversation, and the client remembers it for reconnects.
func (c *Client) Send(ctx context.Context, conversationID, prompt string, mode protocol.Mode, model string) error {
	return c.SendIn(ctx, conversationID, prompt, mode, model, nil)
}

// SendIn is Send with the conversation's workspace (nil: none named; the
// first send fixes it, docs/protocol.md, Workspaces).
//
// The send carries a clientId of the client's making, whose echo says the
// relay got the prompt: should the connection drop first, the client
// finds out after it reconnected whether the relay has it, and delivers a
// TypeUnsent event if it does not (docs/protocol.md, Lost sends).
func (c *Client) SendIn(ctx context.Context, conversationID, prompt string, mode protocol.Mode, model string, ws *protocol.WorkspaceRequest) error {
	d := protocol.Send{ConversationID: conversationID, Prompt: prompt, Mode: mode, Model: model, Workspace: ws, ClientID: uuid.NewString()}
	// The prompt is recorded as sent on the connection it is written to,
	// taken in the same critical section: a reconnection in between would
	// take it for one sent on the connection before.
	c.mu.Lock()
	c.sub(conversationID)
	conn, gen := c.conn, c.gen
	if conn != nil {
		c.sends++
		c.unechoed[d.ClientID] = &unechoed{conv: conversationID, prompt: prompt, gen: gen, order: c.sends}
	}
	c.mu.Unlock()
	err := c.writeEchoedOn(ctx, conn, protocol.TypeSend, d, echo{protocol.TypeUserMessage, conversationID, prompt})
	if err != nil {
		c.mu.Lock()
		delete(c.unechoed, d.ClientID)
		c.mu.Unlock()
	}
	return err
}

// writeEchoed sends a message whose echo names this client (Identity):
// the echo is expected before the message leaves, since it may come back
// before the write returns.
func (c *Client) writeEchoed(ctx context.Context, msgType string, data any, e echo) error {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	return c.writeEchoedOn(ctx, conn, msgType, data, e)
}

// writeEchoedOn is writeEchoed on conn, the connection that was current
// (nil: none was).
func (c *Client) writeEchoedOn(ctx context.Context, conn *websocket.Conn, msgType string, data any, e echo) error {
	c.id.expect(e)
	err := c.writeOn(ctx, conn, msgType, data)
	if err != nil {
		c.id.forget(e.typ, e.conv, e.key)
	}
	return err
}

// Abort stops the conversation's running turn.
func (c *Client) Abort(ctx context.Context, conversationID string) error {
	return c.write(ctx, protocol.TypeAbort, protocol.Abort{ConversationID: conversationID})
}

// SetMode switches the conversation between plan and act, mid-stream too.
func (c *Client) SetMode(ctx context.Context, conversationID string, mode protocol.Mode) error {
	return c.writeEchoed(ctx, protocol.TypeSetMode, protocol.SetMode{ConversationID: conversationID, Mode: mode},
		echo{protocol.TypeModeChanged, conversationID, string(mode)})
}

// Answer resolves an input request with a text answer. For a choice pass
// its 0-based index (nil otherwise); wasFreeform says the user typed it.
func (c *Client) Answer(ctx context.Context, conversationID, requestID, answer string, wasFreeform bool, index *int) error {
	return c.writeEchoed(ctx, protocol.TypeUserInputResponse, protocol.UserInputResponse{
		ConversationID: conversationID,
		RequestID:      requestID,
		Answer:         answer,
		WasFreeform:    &wasFreeform,
		Index:          index,
	}, echo{protocol.TypeUserInputClosed, conversationID, requestID})
}

// Reject declines an input request, which cancels the turn (the relay keeps
// the partial text and ends the turn with status rejected).
func (c *Client) Reject(ctx context.Context, conversationID, requestID string) error {
	return c.writeEchoed(ctx, protocol.TypeUserInputResponse, protocol.UserInputResponse{
		ConversationID: conversationID,
		RequestID:      requestID,
		Answer:         protocol.AnswerReject,
		Rejected:       true,
	}, echo{protocol.TypeUserInputClosed, conversationID, requestID})
}

// List asks for the first page of the relay's conversations (the most
// recently updated, up to protocol.MaxListLimit); a copilot:conversations
// event answers, with NextCursor when there are more.
func (c *Client) List(ctx context.Context) error {
	return c.write(ctx, protocol.TypeList, nil)
}

// ListPage asks for limit conversations (0: the relay's page size,
// protocol.MaxListLimit) after cursor: "" for the first page, else the
// NextCursor of the page before. A copilot:conversations event answers; a
// cursor the relay does not know gets an error (invalid_field).
func (c *Client) ListPage(ctx context.Context, limit int, cursor string) error {
	return c.write(ctx, protocol.TypeList, protocol.List{Limit: max(limit, 0), Cursor: cursor})
}

// Watch turns the relay's copilot:conversation notices on or off: while on,
// every change of the list (a conversation created, renamed, starting or
// ending a turn, opening or closing a question, changing mode, deleted)
// arrives as an event. The relay answers with the first page of the list,
// as for List. The client remembers it and turns it on again after a
// reconnect; while disconnected it is only remembered and Watch returns
// nil.
func (c *Client) Watch(ctx context.Context, on bool) error {
	c.mu.Lock()
	c.watching = on
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return nil
	}
	return c.writeTo(ctx, conn, protocol.TypeList, protocol.List{Watch: &on})
}

// CloseConversation ends the conversation's agent session (copilot:close);
// copilot:shutdown follows.
func (c *Client) CloseConversation(ctx context.Context, conversationID string) error {
	return c.write(ctx, protocol.TypeClose, protocol.ConversationRef{ConversationID: conversationID})
}

// DeleteConversation removes a conversation and its history
// (copilot:delete); its subscribers get copilot:deleted.
func (c *Client) DeleteConversation(ctx context.Context, conversationID string) error {
	return c.write(ctx, protocol.TypeDelete, protocol.ConversationRef{ConversationID: conversationID})
}

// Ping sends a ping now; the keep-alive sends them by itself.
func (c *Client) Ping(ctx context.Context) error {
	return c.write(ctx, protocol.TypePing, nil)
}

// IsRejection reports whether a typed text answer means "reject": `r` or
// `/reject` alone (docs/cli.md, Answering questions).
func IsRejection(answer string) bool {
	a := strings.TrimSpace(answer)
	return a == "r" || a == "/reject"
}

// Diff asks for the patches of the turn that began at checkpoint (of one
// file when path is not empty); the relay answers copilot:diff.
func (c *Client) Diff(ctx context.Context, conversationID, checkpoint, path string) error {
	return c.write(ctx, protocol.TypeDiff, protocol.Diff{ConversationID: conversationID, Checkpoint: checkpoint, Path: path})
}

// Restore puts the conversation's folder back as it was at checkpoint;
// the relay sends copilot:restored, whose undo checkpoint undoes it.
func (c *Client) Restore(ctx context.Context, conversationID, checkpoint string) error {
	return c.write(ctx, protocol.TypeRestore, protocol.Restore{ConversationID: conversationID, Checkpoint: checkpoint})
}

// Workspaces asks the relay for its roots, its default folder and the
// folders of recent conversations; the answer comes as a
// copilot:workspaces event (docs/protocol.md, Workspaces).
func (c *Client) Workspaces(ctx context.Context) error {
	return c.write(ctx, protocol.TypeWorkspaces, protocol.WorkspacesRequest{})
}
