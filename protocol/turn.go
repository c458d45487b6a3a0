package protocol

import (
	"encoding/json"
)

// The events of a turn: the prompt, the agent's text, reasoning and plan,
// its tool calls, its end and its error, and a change of mode.

// Turn statuses carried by copilot:idle.
const (
	StatusCompleted = "completed"
	StatusAborted   = "aborted"
	StatusRejected  = "rejected"
	StatusError     = "error"
)

// UserMessage is copilot:user_message (ext): the prompt that started a turn,
// so that every window, and a replay, shows the user's side of the
// conversation.
type UserMessage struct {
	Header
	MessageID string `json:"messageId"`
	Content   string `json:"content"`
	Mode      Mode   `json:"mode"`
	// SentBy is the device and client that sent the prompt (absent in
	// history stored before devices existed).
	SentBy *By `json:"sentBy,omitempty"`
	// Agent (ext) names, for people, the agent the relay ran this turn
	// with, as the list's entries do ("Copilot CLI", "OpenCode (ACP)"):
	// a conversation's turns may run on different agents when the relay
	// restarts with another, and a client notes the change where it
	// happened. Absent in history stored before relays recorded it.
	Agent string `json:"agent,omitempty"`
	// ClientID (ext) is the clientId of the copilot:send that started the
	// turn, when it gave one: its sender knows the prompt reached the
	// relay.
	ClientID string `json:"clientId,omitempty"`
}

// Delta is copilot:delta: the new text only.
type Delta struct {
	Header
	MessageID string `json:"messageId"`
	Content   string `json:"content"`
}

// Message is copilot:message: a whole assistant message. Truncated is true
// when the message would not fit in a frame: Content is then empty and the
// text is what the deltas carried.
type Message struct {
	Header
	MessageID string `json:"messageId"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
}

// ToolStart is copilot:tool_start.
type ToolStart struct {
	Header
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
}

// ToolEnd is copilot:tool_end. Denied is true when the mode denied the call.
type ToolEnd struct {
	Header
	ToolCallID string `json:"toolCallId"`
	Success    bool   `json:"success"`
	Denied     bool   `json:"denied"`
	Result     string `json:"result,omitempty"`
}

// Idle is copilot:idle: the turn has ended with Status.
type Idle struct {
	Header
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// Reasoning is copilot:reasoning (ext): the agent's reasoning, the new
// text only, kept apart from its reply. MessageID names one run of it, as a
// delta's does a message.
type Reasoning struct {
	Header
	MessageID string `json:"messageId"`
	Content   string `json:"content"`
}

// Plan is copilot:plan (ext): the agent's plan of the turn, whole; it
// replaces the one before.
type Plan struct {
	Header
	Entries []PlanEntry `json:"entries"`
}

// PlanEntry is one step of an agent's plan. Priority is high, medium or
// low; Status pending, in_progress or completed (as the agent said: a
// client shows an unknown one as pending).
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority,omitempty"`
	Status   string `json:"status"`
}

// Plan entry statuses.
const (
	PlanPending    = "pending"
	PlanInProgress = "in_progress"
	PlanCompleted  = "completed"
)

// AgentError is copilot:error.
type AgentError struct {
	Header
	Message string `json:"message"`
}

// ModeChanged is copilot:mode_changed.
type ModeChanged struct {
	Header
	Mode Mode `json:"mode"`
	// ChangedBy (ext) names the device and client whose copilot:set_mode
	// (or copilot:send with another mode) changed it, as SentBy does.
	ChangedBy *By `json:"changedBy,omitempty"`
}
