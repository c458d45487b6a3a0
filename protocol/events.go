package protocol

import (
	"bytes"
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
	if ev, ok := decodeFlat(table, frame); ok {
		return ev, nil
	}
	if ev, ok := decodeFramed(table, frame); ok {
		return ev, nil
	}
	return decodeEnvelope(table, frame)
}

// decodeEnvelope decodes any frame: its envelope, then its data.
func decodeEnvelope(table map[string]func() any, frame []byte) (Event, error) {
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

// framePrefix is how every frame a relay writes begins (Encode): its type
// first, then its data.
const framePrefix = `{"type":"`

// decodeFramed decodes a frame laid out as Encode lays it out,
// {"type":"…","data":{…}}, in one pass: the type read off its start names
// the struct, and the frame is decoded into it at once, where decoding the
// envelope first and its data after read the data three more times (a
// replay of 25,000 events spent half its decoding so). ok is false for any
// other frame, for an unknown type and for any error: decodeEvent then
// decodes it the general way, which words the error.
func decodeFramed(table map[string]func() any, frame []byte) (ev Event, ok bool) {
	rest, found := bytes.CutPrefix(frame, []byte(framePrefix))
	if !found {
		return Event{}, false
	}
	end := bytes.IndexAny(rest, `"\`)
	if end <= 0 || rest[end] != '"' || !bytes.HasPrefix(rest[end:], []byte(`","data":{`)) ||
		!bytes.HasSuffix(bytes.TrimRight(rest, " \t\r\n"), []byte("}}")) {
		return Event{}, false
	}
	typ := string(rest[:end])
	build := table[typ]
	if build == nil {
		return Event{}, false
	}
	data := build()
	// json decodes "data" into the struct the interface's pointer points
	// to; a "type" repeated later in the frame would win, so it is read
	// back and compared.
	env := struct {
		Type string `json:"type"`
		Data any    `json:"data"`
	}{Data: data}
	if err := json.Unmarshal(frame, &env); err != nil || env.Type != typ || env.Data != data {
		return Event{}, false
	}
	return Event{Type: typ, Data: data}, true
}
