package protocol

// Questions to the user (docs/protocol.md, Input requests): the request,
// its kinds and answers, its timeout and its close.

// Input request types (docs/protocol.md, Input requests). An ask_user
// request has no input type.
const (
	InputApproval = "approval"
	InputChoice   = "choice"
	InputText     = "text"
)

// Reasons carried by copilot:user_input_closed.
const (
	ClosedAnswered = "answered"
	ClosedAborted  = "aborted"
	ClosedRejected = "rejected"
)

// Approval answers.
const (
	AnswerApprove = "approve"
	AnswerReject  = "reject"
)

// UserInputRequest is copilot:user_input_request. It is also carried, without
// a seq of its own meaning, as Subscribed.PendingInput.
type UserInputRequest struct {
	Header
	RequestID     string   `json:"requestId"`
	Question      string   `json:"question"`
	Choices       []string `json:"choices,omitempty"`
	AllowFreeform bool     `json:"allowFreeform"`
	InputType     string   `json:"inputType,omitempty"`
	// ExpiresAt is when the relay times the request out (RFC 3339), absent
	// when it waits forever. The relay's clock is the only one: a client
	// counts down to it, corrected by the skew it measured from
	// Subscribed.ServerTime, and never applies a timeout of its own.
	ExpiresAt string `json:"expiresAt,omitempty"`
	// Queued is how many more questions of the conversation wait behind
	// this one.
	Queued int `json:"queued,omitempty"`
}

// UserInputTimeout is copilot:user_input_timeout.
type UserInputTimeout struct {
	Header
	RequestID     string   `json:"requestId"`
	Question      string   `json:"question"`
	Choices       []string `json:"choices,omitempty"`
	AllowFreeform *bool    `json:"allowFreeform,omitempty"`
}

// UserInputClosed is copilot:user_input_closed.
type UserInputClosed struct {
	Header
	RequestID string `json:"requestId"`
	Reason    string `json:"reason"`
	// AnsweredBy names who answered or rejected it (reasons answered and
	// rejected only).
	AnsweredBy *By `json:"answeredBy,omitempty"`
}
