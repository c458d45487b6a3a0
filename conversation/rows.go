package conversation

import "github.com/pilotdesk/pilotdesk/protocol"

// RowKind says what a transcript row shows.
type RowKind uint8

const (
	RowUser   RowKind = iota // the user's prompt
	RowText                  // one markdown block of an assistant message
	RowCode                  // one fenced code block of an assistant message
	RowTool                  // a tool call
	RowStatus                // how a turn ended
	RowMode                  // the mode changed here
	RowNote                  // something that happened (question timed out, answered, refused…)
	RowPlan                  // the tool calls a turn's plan asked for and Plan denied
	// RowReasoning is the agent's reasoning (copilot:reasoning), apart
	// from its reply: shown collapsed under "Thinking", Text its words.
	RowReasoning
	// RowAgentPlan is the plan the agent keeps (copilot:plan): Entries,
	// updated in place as the agent reports progress.
	RowAgentPlan
)

// Tool call states shown on a RowTool.
const (
	ToolRunning  = "running"
	ToolApproved = "approved"
	ToolDenied   = "denied by plan"
	ToolFailed   = "failed"
	// ToolStopped: the turn ended (stopped, rejected, failed, the relay
	// restarted) before the tool reported its end.
	ToolStopped = "stopped"
)

// ToolStateText is what every front end says of a tool call in state (a
// Tool* constant) beside it: the window's row, the page's (words.js
// toolStateText), the terminal's line.
func ToolStateText(state string) string {
	switch state {
	case ToolRunning:
		return "running…"
	case ToolApproved:
		return "approved"
	case ToolDenied:
		return "denied by plan"
	case ToolStopped:
		return "stopped with the turn"
	}
	return "failed"
}

// Note tones for RowNote.
const (
	NoteInfo  = "info"
	NoteWarn  = "warning"
	NoteError = "error"
)

// Row is one transcript row. Rows are values: renderers keep copies.
//
// A 5,000-message conversation folds into about 22,500 rows, all kept:
// what only one kind of row has (a plan's steps, the agent's plan, a
// checkpoint's change set, a restore and their card) is behind one
// pointer, read through Row's methods, so that a row takes 144 bytes where
// it took 216 (the window's memory after such an open: 1.6 MB less).
type Row struct {
	Kind RowKind
	// Done is true when the row will not change again.
	Done bool
	// Version grows each time the row changes.
	Version uint32
	// Text: the prompt (RowUser), markdown (RowText), code without its
	// fences (RowCode), the line to show (RowStatus, RowMode, RowNote), the
	// tool's arguments in short (RowTool, see ToolSummary).
	Text string
	// Lang is a code block's language.
	Lang string
	// Title is the tool's name (RowTool).
	Title string
	// State: a tool's state (Tool*), a turn's status (protocol.Status*), a
	// note's tone (Note*).
	State string
	// Detail is a tool's result or a failed turn's message.
	Detail string
	// Args is a tool call's arguments as the agent sent them (JSON), for
	// DescribeTool.
	Args string
	// Mode is the mode of a user turn, or the new mode of a RowMode.
	Mode protocol.Mode
	// MessageID is the assistant message a text or code block belongs to,
	// or a tool row's tool call id.
	MessageID string
	// more is what a few rows have beside these (rowMore); nil on the
	// others. Never changed in place: a change sets a new one (withMore).
	more *rowMore
}

// rowMore is what only some rows have: see Row's methods.
type rowMore struct {
	steps    []int
	entries  []protocol.PlanEntry
	changes  *protocol.Changes
	restored *protocol.Restored
	card     *Card
}

// Steps are a RowPlan's denied tool rows, by index, in order. Rows are
// only ever appended, so the indexes hold.
func (r Row) Steps() []int {
	if r.more == nil {
		return nil
	}
	return r.more.steps
}

// Entries are a RowAgentPlan's steps, as the agent last sent them
// (replaced whole, never changed in place: renderers keep copies).
func (r Row) Entries() []protocol.PlanEntry {
	if r.more == nil {
		return nil
	}
	return r.more.entries
}

// Changes is what a turn changed in its folder, on the RowNote that says
// so (checkpoints.go); nil on every other row.
func (r Row) Changes() *protocol.Changes {
	if r.more == nil {
		return nil
	}
	return r.more.changes
}

// Restored is what a restore did, on the RowNote that says so; nil on
// every other row.
func (r Row) Restored() *protocol.Restored {
	if r.more == nil {
		return nil
	}
	return r.more.restored
}

// Card is what a changes card or a restore's notice knows beyond its event
// (diffs, a restore on its way); nil until it knows any.
func (r Row) Card() *Card {
	if r.more == nil {
		return nil
	}
	return r.more.card
}

// withMore returns r with a copy of what it has beside its fields, changed
// by change: copies of r made before keep theirs.
func (r Row) withMore(change func(*rowMore)) Row {
	var m rowMore
	if r.more != nil {
		m = *r.more
	}
	change(&m)
	r.more = &m
	return r
}
