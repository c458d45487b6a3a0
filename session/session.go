// Package session defines the agent backends' one interface. The relay drives
// every backend through it, the scripted agent (session/script) and the
// GitHub Copilot CLI (session/copilot) alike, so both go through the same
// permission, input and usage paths.
//
// The relay owns the policy (modes, the input bridge, timeouts); a backend
// only reports what its agent does and asks the Host when the agent needs a
// decision. This package imports nothing of the relay or the protocol.
package session

import (
	"context"
	"encoding/json"
	"errors"
)

// Agent is a backend. It opens one Session per conversation; one Agent serves
// every conversation of a relay (the Copilot backend runs one CLI process).
type Agent interface {
	// Name is the backend's name as the CLI spells it ("script", "copilot").
	Name() string
	// Open returns the agent session of a conversation. host receives every
	// event of that session for as long as it lives. When opts.Resume is set
	// the conversation existed before (the relay restarted): a backend that
	// keeps its own session state resumes it so the agent keeps its context.
	Open(ctx context.Context, conversationID string, opts OpenOptions, host Host) (Session, error)
	// Close stops the backend and every session it opened. It is called once.
	Close() error
}

// Labeler is an Agent that names the agent it runs for people, as the
// conversation list shows it ("Copilot CLI", "OpenCode (ACP)"). An Agent
// without it is named by Name.
type Labeler interface {
	Label() string
}

// OpenOptions configures a new agent session.
type OpenOptions struct {
	Model  string // empty: the backend's default
	Resume bool
	// WorkDir is the folder the conversation's agent works in (its
	// workspace, an absolute path); empty: the backend's own default.
	// One Agent serves sessions in many folders at once.
	WorkDir string
}

// Session is one conversation's agent session.
type Session interface {
	// Run plays one turn and blocks until it ends. Everything the agent does
	// is reported through the Host given to Open.
	//
	// Cancelling ctx aborts the turn (the user pressed Stop, rejected a
	// question, or the relay is shutting down): Run stops the agent promptly
	// and returns ctx.Err(). Any other non-nil error means the turn failed;
	// the relay reports it as copilot:error followed by copilot:idle with
	// status error. A nil error means the turn completed.
	Run(ctx context.Context, turn Turn) error
	// Close ends the agent session. A backend that tracks usage reports it
	// with a Shutdown event before Close returns.
	Close(ctx context.Context) error
}

// Turn is one user prompt.
type Turn struct {
	Prompt string
	Model  string // empty: the session's model
}

// Host is the relay's side of a session. Its methods are safe to call from
// any goroutine.
type Host interface {
	// Emit reports an event. Events of one session are delivered in the order
	// Emit is called.
	Emit(Event)
	// Mode returns the conversation's mode now: "plan" or "act".
	Mode() string
	// Permission decides a tool request from the conversation's mode at the
	// moment of the call: plan denies, act approves. It never blocks on a
	// person.
	Permission(ctx context.Context, req PermissionRequest) Decision
	// Ask puts a question to the user and blocks until it is answered or
	// fails. It returns ErrRejected when the user rejected it (the relay then
	// cancels the turn's context), ErrTimeout when nobody answered in time,
	// ErrInvalidRequest (wrapped, with the reason) when the request itself is
	// malformed, or ctx.Err() when the turn was aborted.
	Ask(ctx context.Context, req InputRequest) (Answer, error)
}

// Errors a backend returns, the same whatever the backend, so that the relay
// and the CLI tell them apart with errors.Is. A backend wraps each with its
// own name (errors.Is still finds it) and adds what a person can do:
// "GitHub Copilot CLI not found: no `copilot` on PATH; install it …".
var (
	// ErrAgentNotFound: the agent's executable is not installed, or not
	// where the settings say.
	ErrAgentNotFound = errors.New("not found")
	// ErrAgentNotExecutable: the agent's executable is there, but this
	// user may not run it (no execute permission, a noexec mount): the
	// file needs mending, not installing.
	ErrAgentNotExecutable = errors.New("cannot be run")
	// ErrNotSignedIn: the agent runs but wants its user signed in first.
	ErrNotSignedIn = errors.New("is not signed in")
	// ErrProtocolMismatch: the agent speaks another version of its
	// protocol than the backend.
	ErrProtocolMismatch = errors.New("protocol version mismatch")
	// ErrClosed: the Agent or the Session was closed.
	ErrClosed = errors.New("closed")
)

// Errors returned by Host.Ask.
var (
	ErrRejected       = errors.New("the user rejected the request")
	ErrTimeout        = errors.New("the user did not answer in time")
	ErrInvalidRequest = errors.New("invalid input request")
)

// PermissionRequest describes a tool the agent wants to run.
type PermissionRequest struct {
	ToolCallID string
	ToolName   string
	Kind       string // the CLI's permission kind (shell, write, read, …); "tool" for the scripted agent
	Arguments  json.RawMessage
}

// Decision is the answer to a PermissionRequest. Reason is meant for the model
// to read when Allow is false.
type Decision struct {
	Allow  bool
	Reason string
}

// PlanDenialReason is what a denied tool call tells the model.
const PlanDenialReason = "plan mode: tools are disabled; describe the plan instead"

// InputRequest is a question for the user: an ask_user request (InputType
// empty) or one of the typed requests ("approval", "choice", "text"; see
// docs/protocol.md, Input requests).
type InputRequest struct {
	Question      string
	Choices       []string
	AllowFreeform *bool // nil: the agent did not say
	InputType     string
}

// Answer is the user's reply to an InputRequest.
type Answer struct {
	Text        string
	WasFreeform bool
	Index       int // 0-based index of the picked choice; -1 when none was picked
}

// Event is something a session reports: one of the types below, passed by
// value (a pointer to one is not an event the Host knows).
type Event interface{ isEvent() }

// Delta is new assistant text.
type Delta struct {
	MessageID string
	Content   string
}

// Message is a whole assistant message (the concatenation of its deltas).
type Message struct {
	MessageID string
	Content   string
}

// Reasoning is new text of the agent's reasoning, kept apart from its
// reply (copilot:reasoning). MessageID names one run of it.
type Reasoning struct {
	MessageID string
	Content   string
}

// Plan is the agent's plan for the turn, whole: it replaces the one
// before (copilot:plan).
type Plan struct {
	Entries []PlanEntry
}

// PlanEntry is one step of a Plan: Priority high, medium or low; Status
// pending, in_progress or completed.
type PlanEntry struct {
	Content  string
	Priority string
	Status   string
}

// ToolStart reports that the agent started a tool call.
type ToolStart struct {
	ToolCallID string
	ToolName   string
	Arguments  json.RawMessage
}

// ToolEnd reports a tool call's outcome; Denied is true when the mode denied it.
type ToolEnd struct {
	ToolCallID string
	Success    bool
	Denied     bool
	Result     string
}

// Usage is the agent's usage report for a model call (copilot:quota).
type Usage struct {
	Model            string
	Cost             *float64
	InputTokens      *int64
	OutputTokens     *int64
	CacheReadTokens  *int64
	CacheWriteTokens *int64
	QuotaSnapshots   json.RawMessage // an object; nil means {}
	// NanoAIU is what the call cost in nano AI units, as the Copilot CLI
	// reports it (copilotUsage.totalNanoAiu); the relay converts it to
	// credits. AICreditsStatus is the CLI's word on credit billing
	// ("unavailable" with your own model).
	NanoAIU         *float64
	AICreditsStatus string
	// Unreported says, with no figures, that the agent reports no usage
	// at all (its turns end with none: Codex on ACP), so that clients say
	// so rather than wait for figures. Sent once per conversation.
	Unreported bool
}

// Shutdown reports that the agent session ended (copilot:shutdown).
type Shutdown struct {
	TotalPremiumRequests float64
	ModelMetrics         json.RawMessage // an object; nil means {}
	NanoAIU              *float64        // the session's total, as Usage.NanoAIU
}

func (Delta) isEvent()     {}
func (Message) isEvent()   {}
func (ToolStart) isEvent() {}
func (ToolEnd) isEvent()   {}
func (Usage) isEvent()     {}
func (Shutdown) isEvent()  {}
func (Reasoning) isEvent() {}
func (Plan) isEvent()      {}
