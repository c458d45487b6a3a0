package protocol

// The conversation list: copilot:conversations, and the
// copilot:conversation and copilot:deleted that keep a watched list current.

// ConversationInfo is one entry of copilot:conversations.
type ConversationInfo struct {
	ConversationID string `json:"conversationId"`
	Title          string `json:"title"`
	CreatedAt      string `json:"createdAt,omitempty"` // RFC 3339
	UpdatedAt      string `json:"updatedAt"`           // RFC 3339
	Streaming      bool   `json:"streaming"`
	Mode           Mode   `json:"mode"`
	WaitingInput   bool   `json:"waitingInput"`
	// Agent (ext) names, for people, the agent that ran the conversation's
	// latest turn ("Copilot CLI", "OpenCode (ACP)"), recorded with the
	// conversation when the turn started; absent before its first turn,
	// for a conversation stored before relays recorded it, and from a
	// relay that does not say.
	Agent string `json:"agent,omitempty"`
	// Workspace (ext) is where the conversation's agent works, once its
	// first send fixed it.
	Workspace *Workspace `json:"workspace,omitempty"`
}

// Conversations is copilot:conversations: one page of the list, most
// recently updated first. NextCursor, when set, asks for the next page.
type Conversations struct {
	Conversations []ConversationInfo `json:"conversations"`
	NextCursor    string             `json:"nextCursor,omitempty"`
	// Role (ext) is the role of the asking connection's token when it is
	// not the owner's (viewer or controller), so that a client shows a
	// viewer a read-only page instead of controls the relay would refuse.
	Role string `json:"role,omitempty"`
}

// ConversationChanged is copilot:conversation: one conversation's entry
// changed (created, renamed, started or stopped streaming, changed mode), or
// it was deleted. It goes to connections that watch the list, so a list is
// kept without polling; it is not a conversation event and has no seq.
type ConversationChanged struct {
	ConversationInfo
	Deleted bool `json:"deleted,omitempty"`
}

// Conversation returns the conversation that changed.
func (c *ConversationChanged) Conversation() string { return c.ConversationID }

// Deleted is copilot:deleted.
type Deleted struct {
	Header
}
