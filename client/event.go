package client

import (
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
	// TypeUnsent says the relay did not get a prompt this client sent:
	// the connection dropped (or the relay restarted) before the relay
	// read it, and once the client reconnected the relay had neither
	// echoed it nor named it starting (docs/protocol.md, Lost sends).
	// The client never sends it again: the consumer gives it back to the
	// user. Should its echo come after all, another TypeUnsent with
	// Arrived set follows the echo: the consumer takes it back. Data is an
	// *Unsent.
	TypeUnsent = "client:unsent"
	// TypeRefused follows the relay's error for a copilot:send of this
	// client (a folder it cannot use, a role that may not send, a turn
	// already running, the budget spent…): the error event itself comes
	// first, as the relay sent it; this one carries the prompt the relay
	// refused, for the consumer to give back to the user, who loses
	// nothing they typed. Data is a *Refused.
	TypeRefused = "client:refused"
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
}

// ConversationID returns the conversation the event is about, or "".
func (e Event) ConversationID() string {
	return protocol.Event{Type: e.Type, Data: e.Data}.ConversationID()
}

// Seq returns the event's sequence number within its conversation, or 0 for
// messages that are not conversation events.
func (e Event) Seq() int64 {
	return protocol.Event{Type: e.Type, Data: e.Data}.Seq()
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

// Conversation returns the conversation whose history was lost.
func (r *Reset) Conversation() string { return r.ConversationID }

// Unsent is the data of a TypeUnsent event: the prompt the relay did not
// get, and the clientId its copilot:send carried. Arrived: it was given
// back before, and its echo came after all.
type Unsent struct {
	ConversationID string
	ClientID       string
	Prompt         string
	Arrived        bool
	order          int // of the sends whose loss one copilot:subscribed told
}

// Conversation returns the conversation the prompt was for.
func (u *Unsent) Conversation() string { return u.ConversationID }

// Refused is the data of a TypeRefused event: the prompt of a copilot:send
// the relay answered with Err, and the clientId the send carried.
type Refused struct {
	ConversationID string
	ClientID       string
	Prompt         string
	Err            *protocol.Error
}

// Conversation returns the conversation the prompt was for.
func (r *Refused) Conversation() string { return r.ConversationID }

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

// Decode turns one server frame into an Event with protocol.DecodeEvent:
// an unknown type decodes to an Event with nil Data (a newer relay may send
// types this client does not know); a frame that is not a valid envelope, or
// whose data does not fit its type, is an error. The event keeps nothing
// of frame, so the caller may reuse it: the client reads every frame into
// the same buffer.
func Decode(frame []byte) (Event, error) {
	ev, err := protocol.DecodeEvent(frame)
	if err != nil {
		return Event{}, err
	}
	return Event{Type: ev.Type, Data: ev.Data}, nil
}
