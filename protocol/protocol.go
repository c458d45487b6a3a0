// Package protocol holds the relay's WebSocket protocol: message names, the
// shapes of their data, error codes, and the validating frame decoder.
//
// It is the contract between the relay (relay/) and its clients (client/,
// ui/, the terminal client), documented in docs/protocol.md. Both directions
// live here: schemas (decode.go) for what clients send, and serverMessages
// (events.go) for what the relay sends, so that a new message is one struct
// and one table row. It depends on nothing but the standard library so that
// every side can import it.
//
// This file holds the message types and the error codes; the data of each
// family of messages is in a file of its own (requests.go, header.go,
// turn.go, input.go, usage.go, conversations.go, workspaces.go,
// checkpoints.go), and encode.go writes frames.
package protocol

import (
	"encoding/json"
)

// MaxFrameBytes is the largest frame the relay reads (docs/protocol.md,
// Transport: 1 MiB).
const MaxFrameBytes = 1 << 20

// Client to server message types.
const (
	TypePing              = "ping"
	TypeSubscribe         = "copilot:subscribe"
	TypeUnsubscribe       = "copilot:unsubscribe"
	TypeSend              = "copilot:send"
	TypeAbort             = "copilot:abort"
	TypeSetMode           = "copilot:set_mode"
	TypeUserInputResponse = "copilot:user_input_response"
	TypeList              = "copilot:list"
	TypeClose             = "copilot:close"
	TypeDelete            = "copilot:delete"
	// TypeWorkspaces is both the request (no data) and its answer
	// (Workspaces): the relay's roots and the folders of recent
	// conversations (docs/protocol.md, Workspaces).
	TypeWorkspaces = "copilot:workspaces"
)

// Server to client message types.
const (
	TypePong             = "pong"
	TypeError            = "error"
	TypeSubscribed       = "copilot:subscribed"
	TypeUserMessage      = "copilot:user_message"
	TypeDelta            = "copilot:delta"
	TypeMessage          = "copilot:message"
	TypeToolStart        = "copilot:tool_start"
	TypeToolEnd          = "copilot:tool_end"
	TypeIdle             = "copilot:idle"
	TypeAgentError       = "copilot:error"
	TypeModeChanged      = "copilot:mode_changed"
	TypeUserInputRequest = "copilot:user_input_request"
	TypeUserInputTimeout = "copilot:user_input_timeout"
	TypeUserInputClosed  = "copilot:user_input_closed"
	TypeQuota            = "copilot:quota"
	TypeShutdown         = "copilot:shutdown"
	TypeConversations    = "copilot:conversations"
	TypeConversation     = "copilot:conversation"
	TypeDeleted          = "copilot:deleted"
	TypeBudget           = "copilot:budget"
	TypeReasoning        = "copilot:reasoning"
	TypePlan             = "copilot:plan"
)

// Error codes carried by an `error` message.
const (
	CodeInvalidJSON      = "invalid_json"
	CodeInvalidMessage   = "invalid_message"
	CodeUnknownType      = "unknown_type"
	CodeMissingField     = "missing_field"
	CodeInvalidField     = "invalid_field"
	CodeConversationBusy = "conversation_busy"
	CodeNotStreaming     = "not_streaming"
	CodeInvalidAnswer    = "invalid_answer"
	CodeTooLarge         = "too_large"
	CodeLimit            = "limit"
	// CodeForbidden: the connection's token lacks the role for the
	// message (roles.go); the connection stays open.
	CodeForbidden = "forbidden"
	// CodeBudgetExceeded: copilot:send once the AI credits spent in the
	// budget's period have reached the relay's budget; no turn starts.
	CodeBudgetExceeded = "budget_exceeded"
)

// ErrorCodes lists every error code the relay sends.
func ErrorCodes() []string {
	return []string{CodeInvalidJSON, CodeInvalidMessage, CodeUnknownType, CodeMissingField, CodeInvalidField,
		CodeConversationBusy, CodeNotStreaming, CodeInvalidAnswer, CodeTooLarge, CodeLimit, CodeForbidden, CodeBudgetExceeded}
}

// Mode is a conversation's tool policy: plan denies every tool request, act
// approves every one.
type Mode string

const (
	ModePlan Mode = "plan"
	ModeAct  Mode = "act"
)

// Valid reports whether m is one of the two modes.
func (m Mode) Valid() bool { return m == ModePlan || m == ModeAct }

// Envelope is one frame: {"type": string, "data"?: object}.
type Envelope struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data,omitempty"`
}
