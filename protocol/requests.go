package protocol

// The data of the messages clients send (docs/protocol.md, Client to
// server); decode.go validates them.

// Subscribe is copilot:subscribe. Epoch is the epoch the client's copy of
// the conversation belongs to: when it differs from the relay's, the relay
// replays from seq 0 and marks copilot:subscribed with Reset.
type Subscribe struct {
	ConversationID string `json:"conversationId"`
	SinceSeq       *int64 `json:"sinceSeq,omitempty"`
	Epoch          string `json:"epoch,omitempty"`
}

// ConversationRef is the data of copilot:unsubscribe, copilot:close and
// copilot:delete.
type ConversationRef struct {
	ConversationID string `json:"conversationId"`
}

// Send is copilot:send. Workspace, honoured by the conversation's first
// send only, names the folder its agent works in (nil: the relay's
// default folder); a later send may repeat it or leave it out.
//
// ClientID (ext) is an id the client chose for this send: the relay
// echoes it on the turn's copilot:user_message (stored with it, so a
// replay carries it too) and names it in copilot:subscribed's starting
// while the turn is being set up, so that a client that lost its
// connection can tell whether the relay got the prompt (docs/protocol.md,
// Lost sends).
type Send struct {
	ConversationID string            `json:"conversationId"`
	Prompt         string            `json:"prompt"`
	Mode           Mode              `json:"mode,omitempty"`
	Model          string            `json:"model,omitempty"`
	Workspace      *WorkspaceRequest `json:"workspace,omitempty"`
	ClientID       string            `json:"clientId,omitempty"`
}

// MaxListLimit is the most conversations one copilot:conversations page
// holds, and the page size when copilot:list gives no limit.
const MaxListLimit = 200

// List is copilot:list: Limit (0: MaxListLimit; more is cut to it) entries
// from Cursor (a previous page's NextCursor; "" for the first page). Watch,
// when given, turns copilot:conversation notices on or off.
type List struct {
	Watch  *bool  `json:"watch,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// PageSize is the number of entries the request asks for.
func (l *List) PageSize() int {
	if l == nil || l.Limit <= 0 || l.Limit > MaxListLimit {
		return MaxListLimit
	}
	return l.Limit
}

// Abort is copilot:abort. ConversationID is empty in the deprecated form.
type Abort struct {
	ConversationID string `json:"conversationId,omitempty"`
}

// SetMode is copilot:set_mode.
type SetMode struct {
	ConversationID string `json:"conversationId"`
	Mode           Mode   `json:"mode"`
}

// UserInputResponse is copilot:user_input_response.
type UserInputResponse struct {
	ConversationID string `json:"conversationId"`
	RequestID      string `json:"requestId"`
	Answer         string `json:"answer"`
	WasFreeform    *bool  `json:"wasFreeform,omitempty"`
	Index          *int   `json:"index,omitempty"`
	Rejected       bool   `json:"rejected,omitempty"`
}

// Conversation methods make every request that names a conversation
// Addressed, so that an error about it can name the conversation.

func (d *Subscribe) Conversation() string         { return d.ConversationID }
func (d *ConversationRef) Conversation() string   { return d.ConversationID }
func (d *Send) Conversation() string              { return d.ConversationID }
func (d *Abort) Conversation() string             { return d.ConversationID }
func (d *SetMode) Conversation() string           { return d.ConversationID }
func (d *UserInputResponse) Conversation() string { return d.ConversationID }
