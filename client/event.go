package client

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// Synthetic event types the client adds to the relay's own. They never come
// from the wire.
const (
	// TypeState reports a change of the connection state. Data is a
	// *StateChange.
	TypeState = "client:state"
	// TypeReset says the relay lost a conversation's history (its epoch
	// changed): drop everything shown for it; the client replays it from
	// seq 0 and the events that follow rebuild it. Data is a *Reset.
	TypeReset = "client:reset"
)

// Event is one message from the relay, decoded, or a synthetic client event.
type Event struct {
	// Type is the protocol message type (protocol.TypeDelta, …) or one of
	// TypeState, TypeReset.
	Type string
	// Data is a pointer to the protocol struct of the type (*protocol.Delta
	// for copilot:delta, *protocol.Error for error, …), nil for pong and for
	// a type this client does not know.
	Data any
	// Raw is the frame as it arrived (nil for synthetic events).
	Raw []byte
}

// ConversationID returns the conversation the event is about, or "".
func (e Event) ConversationID() string {
	switch d := e.Data.(type) {
	case *protocol.Subscribed:
		return d.ConversationID
	case *protocol.Error:
		return d.ConversationID
	case *Reset:
		return d.ConversationID
	}
	if h, ok := header(e.Data); ok {
		return h.ConversationID
	}
	return ""
}

// Seq returns the event's sequence number within its conversation, or 0 for
// messages that are not conversation events.
func (e Event) Seq() int64 {
	if h, ok := header(e.Data); ok {
		return h.Seq
	}
	return 0
}

// StateChange is the data of a TypeState event.
type StateChange struct {
	State State
	// Err is why the connection dropped or why the last attempt failed
	// (nil when it went live or was closed on purpose).
	Err error
	// Attempt counts the failed reconnection attempts so far (0 when live).
	Attempt int
	// RetryIn is the wait before the next attempt (0 when live or closed).
	RetryIn time.Duration
}

// Reset is the data of a TypeReset event.
type Reset struct {
	ConversationID string
	Epoch          string // the new epoch
}

// State is the connection's state as a person would name it.
type State int

const (
	// StateConnecting: the first connection is being made.
	StateConnecting State = iota
	// StateLive: connected; events flow.
	StateLive
	// StateReconnecting: the connection dropped and the client is
	// re-dialling with backoff.
	StateReconnecting
	// StateOffline: reconnection has failed for longer than
	// Config.OfflineAfter; the client keeps retrying at the maximum backoff.
	StateOffline
	// StateClosed: Close was called or the context ended; nothing more happens.
	StateClosed
)

func (s State) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateLive:
		return "live"
	case StateReconnecting:
		return "reconnecting"
	case StateOffline:
		return "offline"
	case StateClosed:
		return "closed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// newData returns a fresh struct for a server message type, or nil when the
// type carries no data or is unknown.
func newData(msgType string) (any, bool) {
	switch msgType {
	case protocol.TypePong:
		return nil, true
	case protocol.TypeError:
		return new(protocol.Error), true
	case protocol.TypeSubscribed:
		return new(protocol.Subscribed), true
	case protocol.TypeUserMessage:
		return new(protocol.UserMessage), true
	case protocol.TypeDelta:
		return new(protocol.Delta), true
	case protocol.TypeMessage:
		return new(protocol.Message), true
	case protocol.TypeToolStart:
		return new(protocol.ToolStart), true
	case protocol.TypeToolEnd:
		return new(protocol.ToolEnd), true
	case protocol.TypeIdle:
		return new(protocol.Idle), true
	case protocol.TypeAgentError:
		return new(protocol.AgentError), true
	case protocol.TypeModeChanged:
		return new(protocol.ModeChanged), true
	case protocol.TypeUserInputRequest:
		return new(protocol.UserInputRequest), true
	case protocol.TypeUserInputTimeout:
		return new(protocol.UserInputTimeout), true
	case protocol.TypeUserInputClosed:
		return new(protocol.UserInputClosed), true
	case protocol.TypeQuota:
		return new(protocol.Quota), true
	case protocol.TypeShutdown:
		return new(protocol.Shutdown), true
	case protocol.TypeConversations:
		return new(protocol.Conversations), true
	case protocol.TypeDeleted:
		return new(protocol.Deleted), true
	}
	return nil, false
}

// Decode turns one server frame into an Event. An unknown type decodes to an
// Event with nil Data (a newer relay may send types this client does not
// know); a frame that is not a valid envelope, or whose data does not fit its
// type, is an error.
func Decode(frame []byte) (Event, error) {
	var env protocol.Envelope
	if err := json.Unmarshal(frame, &env); err != nil {
		return Event{}, fmt.Errorf("decode frame: %w", err)
	}
	if env.Type == "" {
		return Event{}, fmt.Errorf("decode frame: no type")
	}
	ev := Event{Type: env.Type, Raw: frame}
	data, known := newData(env.Type)
	if !known || data == nil {
		return ev, nil
	}
	if len(env.Data) == 0 || string(env.Data) == "null" {
		return Event{}, fmt.Errorf("decode %s: no data", env.Type)
	}
	if err := json.Unmarshal(env.Data, data); err != nil {
		return Event{}, fmt.Errorf("decode %s: %w", env.Type, err)
	}
	ev.Data = data
	return ev, nil
}

// header returns the conversation header of a conversation event.
func header(data any) (protocol.Header, bool) {
	switch d := data.(type) {
	case *protocol.UserMessage:
		return d.Header, true
	case *protocol.Delta:
		return d.Header, true
	case *protocol.Message:
		return d.Header, true
	case *protocol.ToolStart:
		return d.Header, true
	case *protocol.ToolEnd:
		return d.Header, true
	case *protocol.Idle:
		return d.Header, true
	case *protocol.AgentError:
		return d.Header, true
	case *protocol.ModeChanged:
		return d.Header, true
	case *protocol.UserInputRequest:
		return d.Header, true
	case *protocol.UserInputTimeout:
		return d.Header, true
	case *protocol.UserInputClosed:
		return d.Header, true
	case *protocol.Quota:
		return d.Header, true
	case *protocol.Shutdown:
		return d.Header, true
	case *protocol.Deleted:
		return d.Header, true
	}
	return protocol.Header{}, false
}
