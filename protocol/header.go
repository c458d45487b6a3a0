package protocol

// What the relay's messages share: an event's header (its conversation
// and seq), the error reply, and copilot:subscribed.

// Error is the data of an `error` message.
type Error struct {
	Code           string `json:"code"`
	Message        string `json:"message"`
	Type           string `json:"type,omitempty"`
	ConversationID string `json:"conversationId,omitempty"`
	// ClientID (ext) is the clientId of the copilot:send refused, when it
	// carried one: the client gives that prompt back to the user
	// (docs/protocol.md, Lost sends).
	ClientID string `json:"clientId,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Conversation returns the conversation the error is about, "" if none.
func (e *Error) Conversation() string { return e.ConversationID }

// Header is carried by every conversation event: the conversation and the
// event's sequence number (it grows by one per event of the conversation).
// Embedding it is what makes a struct a conversation event (Sequenced).
type Header struct {
	ConversationID string `json:"conversationId"`
	Seq            int64  `json:"seq"`
}

// Conversation returns the conversation the event belongs to.
func (h Header) Conversation() string { return h.ConversationID }

// EventHeader returns the header itself; every struct that embeds Header
// has it, so no code needs a switch over event types to read a seq.
func (h Header) EventHeader() Header { return h }

// Addressed is a server message about one conversation.
type Addressed interface{ Conversation() string }

// conversationOf is the conversation a message's data names, or "" when
// it names none (a ping, a list, a type this build does not know).
func conversationOf(data any) string {
	if a, ok := data.(Addressed); ok {
		return a.Conversation()
	}
	return ""
}

// Sequenced is a conversation event: it has a seq, is stored in the
// conversation's history and replayed.
type Sequenced interface {
	Addressed
	EventHeader() Header
}

// Subscribed is copilot:subscribed. Seq is the latest event's seq (not an
// event of its own: Subscribed is Addressed, not Sequenced). Reset is true
// when the relay replayed from seq 0 because the client's epoch was not its
// own: the client replaces its copy of the conversation. ServerTime is the
// relay's clock when it sent the frame (RFC 3339), from which a client
// measures its own clock's skew before it counts down to an ExpiresAt.
type Subscribed struct {
	ConversationID string            `json:"conversationId"`
	Mode           Mode              `json:"mode"`
	Streaming      bool              `json:"streaming"`
	Seq            int64             `json:"seq"`
	Epoch          string            `json:"epoch"`
	Reset          bool              `json:"reset,omitempty"`
	PendingInput   *UserInputRequest `json:"pendingInput,omitempty"`
	ServerTime     string            `json:"serverTime,omitempty"`
	// Workspace (ext) is where the conversation's agent works, once its
	// first send fixed it.
	Workspace *Workspace `json:"workspace,omitempty"`
	// Starting (ext): a copilot:send the relay took is starting a turn
	// whose copilot:user_message has not been sent yet (the
	// conversation's folder is being set up, or the echo awaits its
	// write): it follows, or the send's error goes to its sender. A
	// client that sent a prompt on a connection that dropped knows by it
	// that the relay got it.
	Starting *Starting `json:"starting,omitempty"`
}

// Starting is copilot:subscribed's starting: ClientID is the send's
// clientId ("" when it gave none).
type Starting struct {
	ClientID string `json:"clientId,omitempty"`
}

// Conversation returns the conversation subscribed to.
func (s *Subscribed) Conversation() string { return s.ConversationID }
