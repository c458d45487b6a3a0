package conversation

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// Apply folds one event of this conversation in and says what changed.
// Events of other conversations, and messages that are not about a
// conversation, change nothing.
//
// Apply only dispatches: what each event means is the method it names,
// below or in the file of its kind of row (checkpoints.go, plan.go…).
// Those methods report what they change through s.upd (touched, listing),
// which points at the update Apply returns while it runs.
func (s *State) Apply(ev client.Event) Update {
	var u Update
	s.upd = &u
	defer func() { s.upd = nil }()
	if id := ev.ConversationID(); id != s.ID {
		return u
	}
	if ev.Type != protocol.TypeError && ev.Type != protocol.TypeDeleted {
		s.OnRelay = true
	}
	if !s.Synced {
		s.replayed++
	}
	switch ev.Data.(type) {
	case *protocol.Delta, *protocol.Message, *protocol.ToolStart, *protocol.ToolEnd, *protocol.Plan,
		*protocol.UserInputRequest, *protocol.AgentError:
		// The agent moved on: its reasoning so far is over ("Thought",
		// not "Thinking…"); more would be another run, with another id.
		s.endThoughts()
	}
	switch d := ev.Data.(type) {
	case *client.Reset:
		s.reset()
	case *protocol.Subscribed:
		s.subscribed(d)
	case *protocol.UserMessage:
		s.userMessage(d)
	case *protocol.Delta:
		s.delta(d.MessageID, d.Content)
		s.turnOutput = true
	case *protocol.Message:
		s.assistantMessage(d)
	case *protocol.Reasoning:
		s.reasoning(d.MessageID, d.Content)
		s.turnOutput = true
	case *protocol.Plan:
		s.agentPlan(d.Entries)
		s.turnOutput = true
	case *protocol.Changes, *protocol.Restored:
		s.checkpointRow(ev.Data) // checkpoints.go
	case *protocol.DiffReply:
		s.diffReply(d)
	case *protocol.ToolStart:
		s.turnOutput = true
		s.startTool(d)
	case *protocol.ToolEnd:
		s.toolEnd(d)
	case *protocol.ModeChanged:
		s.modeChanged(d)
	case *protocol.UserInputRequest:
		s.openRequest(*d)
	case *protocol.UserInputTimeout:
		s.appendRow(Row{Kind: RowNote, State: NoteWarn, Done: true,
			Text: fmt.Sprintf("No answer in time: the question %q timed out and the agent goes on without an answer.", OneLine(d.Question, 120))})
		s.closeRequest(d.RequestID)
	case *protocol.UserInputClosed:
		if s.Pending != nil && s.Pending.Request.RequestID == d.RequestID {
			s.appendRow(Row{Kind: RowNote, State: NoteInfo, Done: true, Text: s.ClosedText(s.Pending.Request.Question, d)})
		}
		s.closeRequest(d.RequestID)
	case *protocol.AgentError:
		s.lastError = d.Message
		s.errorRow = s.appendRow(Row{Kind: RowNote, State: NoteError, Text: "Agent error: " + d.Message, Done: true})
	case *protocol.Idle:
		s.idle(d)
	case *protocol.ConversationChanged:
		if !d.Deleted {
			s.Listed(d.ConversationInfo)
			u.Listing = true
		}
	case *protocol.Quota:
		s.Usage.addQuota(d)
		s.Turn.addQuota(d)
	case *protocol.Shutdown:
		s.Usage.addShutdown(d)
		s.Turn.addShutdown(d)
	case *protocol.Error:
		if !s.checkpointError(d) {
			s.relayError(d)
		}
	}
	slices.Sort(u.Rows)
	u.Rows = slices.Compact(u.Rows)
	return u
}

// reset forgets the history: the client lost its place in it
// (client.Reset), and the relay replays it from the start.
func (s *State) reset() {
	s.Rows = nil
	s.msgs = map[string]*message{}
	s.unfinished, s.running = nil, nil
	s.thoughts = map[string]*thought{}
	s.planRow, s.turnStart, s.errorRow = -1, -1, -1
	s.ranOn = ""
	s.Pending = nil
	s.Streaming = false
	s.Synced = false
	s.Usage, s.Turn = Usage{}, Usage{}
	s.upd.Rebuilt = true
	s.listing()
}

// subscribed takes the conversation's state as the relay says it is once
// the history is replayed: what the replay left open (a message, a tool,
// a question) is closed unless the turn still runs.
func (s *State) subscribed(d *protocol.Subscribed) {
	s.RecordServerTime(d.ServerTime, s.opts.Now())
	s.Mode = d.Mode
	if s.Streaming != d.Streaming {
		s.listing()
	}
	s.Streaming = d.Streaming
	s.Synced = true
	if d.Workspace != nil {
		s.setWorkspace(*d.Workspace)
		s.listing()
	}
	if !d.Streaming {
		s.finishMessages()
		s.stopTools()
	}
	if d.PendingInput != nil {
		s.openRequest(*d.PendingInput)
	} else if s.Pending != nil {
		s.Pending = nil
		s.listing()
	}
	if s.replayed >= compactAfter {
		s.compact()
	}
	s.replayed = 0
}

// userMessage starts a turn with its prompt.
func (s *State) userMessage(d *protocol.UserMessage) {
	s.finishMessages()
	mode := d.Mode
	if !mode.Valid() {
		mode = protocol.ModeAct
	}
	// copilot:send carries the mode the turn runs in.
	s.Mode = mode
	if a := d.Agent; a != "" {
		// The relay names the agent that runs the turn: a relay
		// restarted with another agent goes on with the conversation
		// there, and the transcript says so before the prompt. A prompt
		// that names none (history stored before relays said) changes
		// nothing.
		if s.ranOn != "" && a != s.ranOn {
			s.appendRow(Row{Kind: RowNote, State: NoteInfo, Done: true, Text: AgentChangeText(s.ranOn, a)})
		}
		s.ranOn, s.Agent = a, a
	}
	s.turnStart = s.appendRow(Row{Kind: RowUser, Text: d.Content, Mode: mode, Done: true})
	if by := d.SentBy; by != nil && !s.isSelf(*by) {
		s.appendRow(Row{Kind: RowNote, State: NoteInfo, Done: true, Text: "Sent from " + Who(*by, s.self()) + "."})
	}
	s.Streaming = true
	s.turnOutput = false
	s.lastError, s.errorRow = "", -1
	s.Turn = Usage{}
	s.active()
	if !s.titled {
		s.Title, s.titled = TitleFrom(d.Content), true
	}
	s.listing()
}

// assistantMessage takes an assistant message whole, or, when it was too
// long for one frame, ends the one its deltas carried.
func (s *State) assistantMessage(d *protocol.Message) {
	if d.Truncated {
		if m, ok := s.msgs[d.MessageID]; ok {
			s.finishMessage(m)
		}
		return
	}
	s.wholeMessage(d.MessageID, d.Content)
}

// toolEnd ends a tool call's row; a call whose start was never seen gets
// a row of its own.
func (s *State) toolEnd(d *protocol.ToolEnd) {
	s.turnOutput = true
	state := ToolApproved
	switch {
	case d.Denied:
		state = ToolDenied
	case !d.Success:
		state = ToolFailed
	}
	i := s.findTool(d.ToolCallID)
	if i < 0 {
		s.appendRow(Row{Kind: RowTool, Title: d.ToolCallID, State: state, Detail: d.Result, MessageID: d.ToolCallID, Done: true})
		return
	}
	r := s.Rows[i]
	r.State, r.Detail, r.Done = state, d.Result, true
	s.setRow(i, r)
}

// modeChanged takes the new mode, with a row that says who changed it
// once the conversation has any.
func (s *State) modeChanged(d *protocol.ModeChanged) {
	if d.Mode == s.Mode {
		return
	}
	s.Mode = d.Mode
	if len(s.Rows) > 0 {
		s.appendRow(Row{Kind: RowMode, Mode: d.Mode, Text: s.modeChangedText(d), Done: true})
	}
	s.listing()
}

// idle ends the turn with its status row, which takes the place of the
// agent's error row when that is the last row and says the same.
func (s *State) idle(d *protocol.Idle) {
	s.finishMessages()
	s.stopTools()
	detail := d.Message
	if detail == "" && d.Status == protocol.StatusError {
		detail = s.lastError
	}
	status := Row{Kind: RowStatus, State: d.Status, Text: StatusText(d.Status), Detail: detail, Done: true}
	// A turn the relay cut (its restart, or a relay of the cluster lost)
	// was not stopped by anyone.
	if detail == RestartedMessage {
		status.Text, status.Detail = InterruptedText, ""
	} else if strings.HasPrefix(detail, "relay lost") {
		status.Text = InterruptedText
	}
	switch {
	case detail == "" || detail != s.lastError || s.errorRow < 0:
		s.appendRow(status)
	case s.errorRow == len(s.Rows)-1:
		// The agent's error ends the turn: one row says both, rather
		// than the same words twice.
		s.setRow(s.errorRow, status)
	default:
		// Its error row stands above what followed; the end says
		// only that the turn failed.
		status.Detail = ""
		s.appendRow(status)
	}
	s.planCard() // under the turn's end
	s.Streaming = false
	s.turnOutput = false
	s.Pending = nil
	s.active()
	s.listing()
}
