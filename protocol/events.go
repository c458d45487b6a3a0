package protocol

import (
	"encoding/json"
	"fmt"
	"sort"
)

// serverMessages is the table of every server-to-client message: its type
// and a constructor of the struct its data decodes into (nil for a message
// without data). It is the one place a new server message is added: one
// struct, one row; DecodeEvent, the client and the docs test read it.
var serverMessages = map[string]func() any{
	TypePong:             nil,
	TypeError:            func() any { return new(Error) },
	TypeSubscribed:       func() any { return new(Subscribed) },
	TypeUserMessage:      func() any { return new(UserMessage) },
	TypeDelta:            func() any { return new(Delta) },
	TypeMessage:          func() any { return new(Message) },
	TypeToolStart:        func() any { return new(ToolStart) },
	TypeToolEnd:          func() any { return new(ToolEnd) },
	TypeIdle:             func() any { return new(Idle) },
	TypeAgentError:       func() any { return new(AgentError) },
	TypeModeChanged:      func() any { return new(ModeChanged) },
	TypeUserInputRequest: func() any { return new(UserInputRequest) },
	TypeUserInputTimeout: func() any { return new(UserInputTimeout) },
	TypeUserInputClosed:  func() any { return new(UserInputClosed) },
	TypeQuota:            func() any { return new(Quota) },
	TypeShutdown:         func() any { return new(Shutdown) },
	TypeConversations:    func() any { return new(Conversations) },
	TypeConversation:     func() any { return new(ConversationChanged) },
	TypeDeleted:          func() any { return new(Deleted) },
	TypeBudget:           func() any { return new(Budget) },
	TypeReasoning:        func() any { return new(Reasoning) },
	TypePlan:             func() any { return new(Plan) },
	TypeChanges:          func() any { return new(Changes) },
	TypeRestored:         func() any { return new(Restored) },
	TypeDiff:             func() any { return new(DiffReply) },
	TypeWorkspaces:       func() any { return new(Workspaces) },
}

// ServerTypes lists every server-to-client message type, sorted.
func ServerTypes() []string {
	out := make([]string, 0, len(serverMessages))
	for t := range serverMessages {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// KnownServerType reports whether t is a server-to-client message type.
func KnownServerType(t string) bool {
	_, ok := serverMessages[t]
	return ok
}

// Event is one decoded server message. Data is a pointer to the type's
// struct (*Delta for copilot:delta, *Error for error, …), nil for pong and
// for a type this build does not know.
type Event struct {
	Type string
	Data any
}

// ConversationID returns the conversation the message is about, or "".
func (e Event) ConversationID() string { return conversationOf(e.Data) }

// Seq returns the event's seq within its conversation, or 0 for a message
// that is not a conversation event.
func (e Event) Seq() int64 {
	if s, ok := e.Data.(Sequenced); ok {
		return s.EventHeader().Seq
	}
	return 0
}

// DecodeEvent turns one server frame into an Event. An unknown type decodes
// to an Event with nil Data (a newer relay may send types this build does
// not know, and a client skips them); a frame that is not a valid envelope,
// or whose data does not fit its type, is an error.
func DecodeEvent(frame []byte) (Event, error) {
	return decodeEvent(serverMessages, frame)
}

func decodeEvent(table map[string]func() any, frame []byte) (Event, error) {
	var env Envelope
	if err := json.Unmarshal(frame, &env); err != nil {
		return Event{}, fmt.Errorf("decode frame: %w", err)
	}
	if env.Type == "" {
		return Event{}, fmt.Errorf("decode frame: no type")
	}
	ev := Event{Type: env.Type}
	build := table[env.Type]
	if build == nil {
		return ev, nil
	}
	if len(env.Data) == 0 || string(env.Data) == "null" {
		return Event{}, fmt.Errorf("decode %s: no data", env.Type)
	}
	data := build()
	if err := json.Unmarshal(env.Data, data); err != nil {
		return Event{}, fmt.Errorf("decode %s: %w", env.Type, err)
	}
	ev.Data = data
	return ev, nil
}
