// Package protocol holds the relay's WebSocket protocol: message names, the
// shapes of their data, error codes, and the validating frame decoder.
//
// It is the contract between the relay (relay/) and its clients (client/,
// ui/, the terminal client), documented in docs/protocol.md. Both directions
// live here: schemas (decode.go) for what clients send, and serverMessages
// (events.go) for what the relay sends, so that a new message is one struct
// and one table row. It depends on nothing but the standard library so that
// every side can import it.
package protocol

import (
	"bytes"
	"encoding/json"
	"math"
	"sync"
	"time"
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

// Turn statuses carried by copilot:idle.
const (
	StatusCompleted = "completed"
	StatusAborted   = "aborted"
	StatusRejected  = "rejected"
	StatusError     = "error"
)

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

// Envelope is one frame: {"type": string, "data"?: object}.
type Envelope struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Encode builds the frame for a message. data may be nil. Unlike
// json.Marshal it leaves <, > and & as they are: escaped, each costs six
// bytes, and a prompt of them would grow six-fold on the wire.
//
// The relay encodes every event once, for all its subscribers, so this is
// on the path of every delivery: it writes the envelope around the data
// itself, in a buffer kept between calls, and returns a copy of the
// frame: one allocation, where a fresh encoder, its growing buffer and the
// envelope's struct took three (and the frame kept the buffer's spare
// capacity, up to its own length again).
func Encode(msgType string, data any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	frame, err := e.encode(msgType, data)
	if e.buf.Cap() <= maxPooledEncoder {
		encoders.Put(e)
	}
	return frame, err
}

// encoder is a buffer and a JSON encoder writing into it, lent by encoders.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// maxPooledEncoder: an encoder whose buffer grew past this (a frame of a
// large tool output) is left to the collector, not kept.
const maxPooledEncoder = 64 << 10

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// encode lays out {"type":…,"data":…}, or {"type":…} for nil data, as
// json.Marshal of the two-field struct would but for the escaping of
// markup, and returns a copy.
func (e *encoder) encode(msgType string, data any) ([]byte, error) {
	e.buf.Reset()
	e.buf.WriteString(`{"type":`)
	if plainString(msgType) {
		// Every type the protocol defines: JSON is the bytes quoted, and
		// writing them saves boxing the string for the encoder.
		e.buf.WriteByte('"')
		e.buf.WriteString(msgType)
		e.buf.WriteByte('"')
	} else if err := e.value(msgType); err != nil {
		return nil, err
	}
	if data != nil {
		e.buf.WriteString(`,"data":`)
		if err := e.value(data); err != nil {
			return nil, err
		}
	}
	e.buf.WriteByte('}')
	return bytes.Clone(e.buf.Bytes()), nil
}

// plainString reports whether s is its own JSON string content: printable
// ASCII without a quote or a backslash (markup is not escaped here).
func plainString(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// value appends v's JSON, without the newline json.Encoder ends it with.
func (e *encoder) value(v any) error {
	if err := e.enc.Encode(v); err != nil {
		return err
	}
	e.buf.Truncate(e.buf.Len() - 1)
	return nil
}

// ---- client to server data ----

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
type Send struct {
	ConversationID string            `json:"conversationId"`
	Prompt         string            `json:"prompt"`
	Mode           Mode              `json:"mode,omitempty"`
	Model          string            `json:"model,omitempty"`
	Workspace      *WorkspaceRequest `json:"workspace,omitempty"`
}

// Workspace isolations (docs/protocol.md, Workspaces): the agent works in
// the folder itself, or in a git worktree of its repository on a branch of
// its own.
const (
	IsolationNone     = "none"
	IsolationWorktree = "worktree"
)

// WorkspaceRequest is copilot:send's workspace: Path is an absolute
// folder on the relay's machine, Isolation IsolationNone ("" means it) or
// IsolationWorktree.
type WorkspaceRequest struct {
	Path      string `json:"path"`
	Isolation string `json:"isolation,omitempty"`
}

// Worktree reports whether the request asks for a worktree.
func (w *WorkspaceRequest) Worktree() bool { return w != nil && w.Isolation == IsolationWorktree }

// Workspace is a conversation's workspace once its first send fixed it:
// Path as the user chose it, Isolation, Dir where the agent runs (the
// worktree's folder, or the folder itself), and for a worktree its Branch
// and Base (the commit it started from).
type Workspace struct {
	Path      string `json:"path"`
	Isolation string `json:"isolation"`
	Dir       string `json:"dir"`
	Branch    string `json:"branch,omitempty"`
	Base      string `json:"base,omitempty"`
}

// WorkspacesRequest is the (empty) data of the copilot:workspaces request.
type WorkspacesRequest struct{}

// Workspaces is the answer to copilot:workspaces: the relay's roots (the
// folders inside which a conversation may work), its default folder, and
// up to MaxRecentWorkspaces folders of recent conversations, newest first,
// so that a client that cannot browse the relay's disk can offer them.
type Workspaces struct {
	Roots   []string          `json:"roots"`
	Default string            `json:"default,omitempty"`
	Recent  []RecentWorkspace `json:"recent"`
}

// MaxRecentWorkspaces is the most folders copilot:workspaces lists.
const MaxRecentWorkspaces = 20

// RecentWorkspace is a folder of a recent conversation: Git whether it is
// inside a git repository, Branch the branch its checkout is on (absent
// when detached or not a repository), LastUsed (RFC 3339) when a
// conversation there was last updated.
type RecentWorkspace struct {
	Path     string `json:"path"`
	Git      bool   `json:"git"`
	Branch   string `json:"branch,omitempty"`
	LastUsed string `json:"lastUsed"`
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

// ---- server to client data ----

// Error is the data of an `error` message.
type Error struct {
	Code           string `json:"code"`
	Message        string `json:"message"`
	Type           string `json:"type,omitempty"`
	ConversationID string `json:"conversationId,omitempty"`
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
}

// Conversation returns the conversation subscribed to.
func (s *Subscribed) Conversation() string { return s.ConversationID }

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

// Quota is copilot:quota: the usage of one model call. QuotaSnapshots is
// always an object (quota name → QuotaSnapshot).
type Quota struct {
	Header
	QuotaSnapshots   json.RawMessage `json:"quotaSnapshots"`
	Model            string          `json:"model,omitempty"`
	Cost             *float64        `json:"cost,omitempty"`
	CacheReadTokens  *int64          `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens *int64          `json:"cacheWriteTokens,omitempty"`
	InputTokens      *int64          `json:"inputTokens,omitempty"`
	OutputTokens     *int64          `json:"outputTokens,omitempty"`
	// AICredits is what the call cost in AI credits; AICreditsStatus is
	// the agent's word on credit billing ("unavailable" with your own
	// model), passed as it came.
	AICredits       *float64 `json:"aiCredits,omitempty"`
	AICreditsStatus string   `json:"aiCreditsStatus,omitempty"`
	// CreditsPerDay (ext) is the relay's pace of spending when the call
	// was reported: the AI credits its agents spent a day, over all its
	// conversations, from its stored spend (the last PaceWindow, or since
	// its first spend when that is younger, at least a day). Sent with a
	// call that reported credits.
	CreditsPerDay *float64 `json:"creditsPerDay,omitempty"`
	// Unreported (ext), with no figures, says that the agent reports no
	// usage at all (an ACP agent such as Codex): clients say so in their
	// usage line instead of waiting for figures. It reports no call.
	Unreported bool `json:"unreported,omitempty"`
}

// PaceWindow is how far back the relay's CreditsPerDay looks.
const PaceWindow = 7 * 24 * time.Hour

// NanoAIUPerCredit converts the Copilot CLI's nano AI units to AI credits:
// a nano-AIU is 10^-9 of an AI unit, and one AI unit is one credit
// (US$0.01), as docs/protocol.md, Usage, says.
const NanoAIUPerCredit = 1e9

// Credits converts nano-AIU to credits (nil stays nil).
func Credits(nanoAIU *float64) *float64 {
	if nanoAIU == nil {
		return nil
	}
	c := *nanoAIU / NanoAIUPerCredit
	return &c
}

// Budget is copilot:budget: the relay's AI credit budget and what was
// spent against it, over every conversation, in the period that ends now
// (a sliding window of PeriodSeconds). A relay with a budget sends it to
// each connection when it opens and again whenever a figure changes; a
// relay without one never sends it. It is not a conversation event.
//
// ResetsAt is set while SpentCredits has reached BudgetCredits (copilot:send
// is refused with CodeBudgetExceeded): the moment (RFC 3339) enough of the
// spend leaves the period for new turns to start, when nothing more is
// spent. ServerTime is the relay's clock when it sent the message.
type Budget struct {
	BudgetCredits float64 `json:"budgetCredits"`
	SpentCredits  float64 `json:"spentCredits"`
	PeriodSeconds int64   `json:"periodSeconds"`
	ResetsAt      string  `json:"resetsAt,omitempty"`
	ServerTime    string  `json:"serverTime"`
}

// BudgetWarnFraction is the share of the budget at which clients warn,
// once, that it is running out.
const BudgetWarnFraction = 0.8

// Remaining is the credits left to spend in the period (0 once spent),
// rounded to the nano-AIU the figures are exact to, so that 10 - 7.9 is 2.1.
func (b *Budget) Remaining() float64 {
	left := math.Round((b.BudgetCredits-b.SpentCredits)*NanoAIUPerCredit) / NanoAIUPerCredit
	return max(0, left)
}

// Exceeded reports whether new turns are refused.
func (b *Budget) Exceeded() bool { return b.SpentCredits >= b.BudgetCredits }

// Warn reports whether the spend has reached BudgetWarnFraction of the
// budget, when a client warns.
func (b *Budget) Warn() bool { return b.SpentCredits >= BudgetWarnFraction*b.BudgetCredits }

// QuotaSnapshot is one entry of Quota.QuotaSnapshots, in the Copilot CLI's
// shape. Pointers tell a missing figure from a zero.
type QuotaSnapshot struct {
	Unlimited           bool     `json:"isUnlimitedEntitlement"`
	EntitlementRequests *float64 `json:"entitlementRequests,omitempty"`
	UsedRequests        *float64 `json:"usedRequests,omitempty"`
	RemainingPercentage *float64 `json:"remainingPercentage,omitempty"`
	ResetDate           string   `json:"resetDate,omitempty"`
	// TokenBasedBilling: the quota is counted in AI credits rather than
	// in requests (the CLI's snapshot field), so the relay's
	// CreditsPerDay says how fast it goes.
	TokenBasedBilling bool `json:"tokenBasedBilling,omitempty"`
}

// Snapshots decodes QuotaSnapshots; an empty or malformed object gives nil
// (a bring-your-own-model provider reports {}).
func (q *Quota) Snapshots() map[string]QuotaSnapshot {
	var snaps map[string]QuotaSnapshot
	if len(q.QuotaSnapshots) == 0 || json.Unmarshal(q.QuotaSnapshots, &snaps) != nil || len(snaps) == 0 {
		return nil
	}
	return snaps
}

// Shutdown is copilot:shutdown. ModelMetrics is always an object (model
// name → ModelMetric).
type Shutdown struct {
	Header
	TotalPremiumRequests float64         `json:"totalPremiumRequests"`
	ModelMetrics         json.RawMessage `json:"modelMetrics"`
	AICredits            *float64        `json:"aiCredits,omitempty"` // the session's total
}

// ModelMetric is one entry of Shutdown.ModelMetrics, in the Copilot CLI's
// shape.
type ModelMetric struct {
	Requests struct {
		Count float64 `json:"count"`
		Cost  float64 `json:"cost"`
	} `json:"requests"`
	Usage struct {
		InputTokens      int64 `json:"inputTokens"`
		OutputTokens     int64 `json:"outputTokens"`
		CacheReadTokens  int64 `json:"cacheReadTokens,omitempty"`
		CacheWriteTokens int64 `json:"cacheWriteTokens,omitempty"`
	} `json:"usage"`
}

// Metrics decodes ModelMetrics; a malformed object gives nil.
func (s *Shutdown) Metrics() map[string]ModelMetric {
	var m map[string]ModelMetric
	if json.Unmarshal(s.ModelMetrics, &m) != nil {
		return nil
	}
	return m
}

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

// Conversation methods make every request that names a conversation
// Addressed, so that an error about it can name the conversation.

func (d *Subscribe) Conversation() string         { return d.ConversationID }
func (d *ConversationRef) Conversation() string   { return d.ConversationID }
func (d *Send) Conversation() string              { return d.ConversationID }
func (d *Abort) Conversation() string             { return d.ConversationID }
func (d *SetMode) Conversation() string           { return d.ConversationID }
func (d *UserInputResponse) Conversation() string { return d.ConversationID }
