// Package conversation folds the relay's events of one conversation into
// its state: the transcript's rows (prompts, assistant text cut into
// markdown blocks, tool calls, status lines, notes), the mode, whether a
// turn streams, the open question and its deadline, and the usage. It is
// the one interpretation of the protocol's conversation events; the window
// (ui/) and the terminal client (chat/) only render it, as a view renders a
// model. It imports no Fyne and holds no lock: its owner serialises calls.
package conversation

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// Pending is the open input request of a conversation.
type Pending struct {
	Request protocol.UserInputRequest
	// Since is when this client first saw the request. Deadline is when
	// the relay times it out, on this client's clock: the request's
	// expiresAt (the relay's clock) corrected by the skew measured from
	// copilot:subscribed's serverTime; zero when the relay waits forever.
	// The client applies no timeout of its own.
	Since    time.Time
	Deadline time.Time
	// ExpiresAt is the request's expiresAt as the relay sent it, on the
	// relay's clock (zero: none).
	ExpiresAt time.Time
	// Answering is true while this client's answer is on its way; the
	// question hides, and shows again if the relay refuses the answer.
	Answering bool
	// Hint says why the question is open again after an answer: the
	// relay's refusal (AnswerRefusedText) or the client's own failure to
	// send it (AnswerFailed's why), whole, as the question shows it.
	Hint string
}

// Options configures a State.
type Options struct {
	// Self is who this client is on the relay: its token's device and its
	// kind, as answeredBy and sentBy name them, so that its own answers
	// and prompts (also those of an earlier run) are told from others'.
	// Device "" is protocol.OwnDevice (the relay's own token); Client ""
	// takes any kind of client on that device as this one.
	Self protocol.By
	// Identity, when set, is who this client is instead of Self: learned
	// by the client from the echoes of what it sent (client.Identity), so
	// a client with a device token tells its own from another's too.
	Identity *client.Identity
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Update says what one Apply changed, for a renderer that draws changes
// rather than the whole state.
type Update struct {
	// Rows lists the rows appended or changed, ascending, once each.
	Rows []int
	// Rebuilt is true when every row was replaced (the relay lost the
	// conversation's history and it is replayed anew).
	Rebuilt bool
	// Listing is true when what a list of conversations shows changed:
	// title, mode, streaming, waiting, last activity.
	Listing bool
	// Text is the assistant text this event added, as streamed, and
	// MessageID the message it belongs to: a line-oriented renderer prints
	// it as it comes.
	Text      string
	MessageID string
}

// State is one conversation's state. Read its exported fields; change it
// only through Apply and the methods below.
type State struct {
	ID        string
	Title     string
	UpdatedAt time.Time
	Mode      protocol.Mode
	Streaming bool
	// Agent names the agent that ran the conversation's latest turn, as
	// its list entry or its latest prompt says ("" until one says; an
	// older relay never does).
	Agent string
	// Synced is true once copilot:subscribed arrived: the history has been
	// replayed and what follows is live.
	Synced bool
	// OnRelay is true when the relay knows the conversation (it listed it
	// or sent an event of it); a conversation made with New is not on the
	// relay until its first prompt.
	OnRelay bool
	Rows    []Row
	Pending *Pending
	// Usage is the conversation's usage; Turn the running or last turn's.
	Usage Usage
	Turn  Usage
	// Workspace is where the conversation's agent works, once its first
	// send fixed it (its list entry or copilot:subscribed says; nil
	// before).
	Workspace *protocol.Workspace
	// Skew is the relay's clock minus this client's, measured from the
	// last copilot:subscribed (RecordServerTime); Pending.Deadline is
	// corrected by it.
	Skew time.Duration

	opts Options
	// turnOutput is true once the running turn showed any text or tool call.
	turnOutput bool
	// turnStart is the row of the running or last turn's prompt (-1:
	// none yet).
	turnStart int
	// lastError is the last copilot:error of the running turn, and
	// errorRow the row that shows it (-1: none).
	lastError string
	errorRow  int
	titled    bool // the title came from the relay or a prompt
	// ranOn is the agent the latest prompt (copilot:user_message) named,
	// to note where the conversation's agent changed ("" until one does).
	ranOn string
	msgs  map[string]*message // assistant messages by id
	// unfinished are the messages of msgs not yet done, and running the
	// tool rows started and not yet seen to end: a turn's end closes
	// those, where walking every message and row at each turn's end made
	// the replay of a long history quadratic (2,500 turns: 22,500 rows
	// walked 2,500 times, most of the fold's time).
	unfinished []*message
	running    []int
	// replayed counts the events folded before the history's replay
	// ended (Synced), to compact a long one at its end.
	replayed int
	// thoughts are the reasoning messages by id; planRow is the row of
	// the running or last turn's agent plan (-1: none yet).
	thoughts map[string]*thought
	planRow  int
	// wanted is the folder the user chose before the first send
	// (workspace.go).
	wanted   *protocol.WorkspaceRequest
	answered map[string]string // requestId → the answer this client sent
	upd      *Update           // the Update being built by Apply
}

// message is the streaming state of one assistant message.
type message struct {
	id    string
	split *splitter
	// tailRow is the row showing the unfinished block, -1 if none.
	tailRow int
	// lastRow is the last row this message wrote, to notice that something
	// else came in between.
	lastRow int
	done    bool
	// text is the whole markdown of a finished message once compact has
	// made it one string that its rows share; split then holds no text.
	text string
}

// thought is one run of the agent's reasoning, shown in one row.
type thought struct {
	row  int
	text strings.Builder
}

// New returns the empty state of conversation id.
func New(id string, opts Options) *State {
	if opts.Self.Device == "" {
		opts.Self.Device = protocol.OwnDevice
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &State{
		ID:        id,
		Title:     untitled,
		Mode:      protocol.ModeAct,
		UpdatedAt: opts.Now(),
		opts:      opts,
		errorRow:  -1,
		turnStart: -1,
		planRow:   -1,
		thoughts:  map[string]*thought{},
		msgs:      map[string]*message{},
		answered:  map[string]string{},
	}
}

// Thinking is true while a turn streams and has shown nothing yet.
func (s *State) Thinking() bool {
	return s.Streaming && s.Pending == nil && !s.turnOutput
}

// active notes activity now: a turn that starts or ends live. A turn
// replayed when the conversation is opened is not activity (UpdatedAt
// keeps what the relay's list says), or opening a conversation would move
// it to the top of the list.
func (s *State) active() {
	if s.Synced {
		s.UpdatedAt = s.opts.Now()
	}
}

// Listed folds the conversation's entry of copilot:conversations in.
func (s *State) Listed(info protocol.ConversationInfo) {
	s.OnRelay = true
	if info.Title != "" {
		s.Title, s.titled = info.Title, true
	}
	if t, err := time.Parse(time.RFC3339, info.UpdatedAt); err == nil {
		s.UpdatedAt = t
	}
	if info.Agent != "" {
		s.Agent = info.Agent
	}
	if info.Workspace != nil {
		s.setWorkspace(*info.Workspace)
	}
	if !s.Synced {
		// Until the subscription says, the list is the best we know.
		s.Streaming = info.Streaming
		if info.Mode.Valid() {
			s.Mode = info.Mode
		}
	}
}

// setWorkspace records the conversation's workspace (a copy).
func (s *State) setWorkspace(ws protocol.Workspace) {
	s.Workspace = &ws
	s.wanted = nil
}

// relayError shows an `error` about this conversation where it belongs: a
// refused answer reopens the question with the relay's hint, anything
// else is a note.
func (s *State) relayError(e *protocol.Error) {
	if e.Code == protocol.CodeInvalidAnswer && s.Pending != nil {
		s.Pending.Answering = false
		s.Pending.Hint = AnswerRefusedText(e.Message)
		return
	}
	tone := NoteError
	if e.Code == protocol.CodeConversationBusy {
		tone = NoteWarn // what to do, as the web client shows it
	}
	s.appendRow(Row{Kind: RowNote, State: tone, Done: true, Text: RelayErrorText(e)})
}

// MarkAnswering records that this client sent an answer (or a rejection:
// rejected true) to the open request.
func (s *State) MarkAnswering(requestID, answer string, rejected bool) {
	if rejected {
		answer = ""
	}
	s.answered[requestID] = answer
	if s.Pending != nil && s.Pending.Request.RequestID == requestID {
		s.Pending.Answering = true
		s.Pending.Hint = ""
	}
}

// AnswerFailed reopens the request after the answer could not be sent,
// with why, as the question is to show it (AnswerNotSentText).
func (s *State) AnswerFailed(requestID, why string) {
	if s.Pending != nil && s.Pending.Request.RequestID == requestID {
		s.Pending.Answering = false
		s.Pending.Hint = why
	}
}

// AddNote adds a note row: something the client itself wants to say, such
// as a prompt that could not be sent. It returns the row's index.
func (s *State) AddNote(tone, text string) int {
	return s.appendRow(Row{Kind: RowNote, State: tone, Text: text, Done: true})
}

// MessageText returns the whole markdown of an assistant message so far.
func (s *State) MessageText(messageID string) string {
	if m, ok := s.msgs[messageID]; ok {
		if m.split.buf == nil && m.text != "" {
			return m.text
		}
		return m.split.text()
	}
	return ""
}

// isSelf reports whether by names this client (Options.Identity, or else
// Options.Self).
func (s *State) isSelf(by protocol.By) bool {
	if s.opts.Identity != nil {
		return s.opts.Identity.Is(by)
	}
	return by.Device == s.opts.Self.Device && (s.opts.Self.Client == "" || by.Client == s.opts.Self.Client)
}

// self is who this client is, for naming others relative to it (Who):
// zero while a device token's identity is not known yet.
func (s *State) self() protocol.By {
	if s.opts.Identity != nil {
		by, _ := s.opts.Identity.Self()
		return by
	}
	return s.opts.Self
}

// ---- rows ----

func (s *State) appendRow(r Row) int {
	r.Version = 1
	if len(s.Rows) == cap(s.Rows) && !s.Synced {
		// While a replay folds, double the rows' capacity: append grows a
		// long slice by a quarter at a time, so a replay of 22,500 rows
		// (216 bytes each) allocated and copied the rows five times over
		// (23 MB for a 5,000-message conversation); doubling copies them
		// about once, and compact trims the slack at a long replay's
		// end. Live rows grow as append grows them, with less slack.
		grown := make([]Row, len(s.Rows), max(minRowsCap, 2*len(s.Rows)))
		copy(grown, s.Rows)
		s.Rows = grown
	}
	s.Rows = append(s.Rows, r)
	i := len(s.Rows) - 1
	s.touched(i)
	return i
}

// minRowsCap is the capacity a conversation's rows start with.
const minRowsCap = 64

func (s *State) setRow(i int, r Row) {
	r.Version = s.Rows[i].Version + 1
	s.Rows[i] = r
	s.touched(i)
}

func (s *State) touched(i int) {
	if s.upd != nil {
		s.upd.Rows = append(s.upd.Rows, i)
	}
}

// planCard ends a turn whose tool calls Plan denied with the plan they
// make: what the agent wanted to do, to review and run.
func (s *State) planCard() {
	var steps []int
	for i := max(s.turnStart, 0); i < len(s.Rows); i++ {
		if s.Rows[i].Kind == RowTool && s.Rows[i].State == ToolDenied {
			steps = append(steps, i)
		}
	}
	if len(steps) > 0 {
		s.appendRow(Row{Kind: RowPlan, MessageID: "plan-" + s.Rows[steps[0]].MessageID, Done: true, more: &rowMore{steps: steps}})
	}
}

// stopTools closes the tool rows the turn left running: its end is theirs.
func (s *State) stopTools() {
	for _, i := range s.running {
		if r := s.Rows[i]; r.Kind == RowTool && r.State == ToolRunning {
			r.State, r.Done = ToolStopped, true
			s.setRow(i, r)
		}
	}
	s.running = s.running[:0]
}

// startTool shows a tool call that started.
func (s *State) startTool(d *protocol.ToolStart) {
	i := s.appendRow(Row{Kind: RowTool, Title: d.ToolName, Text: ToolSummary(d.Arguments), Args: string(d.Arguments), State: ToolRunning, MessageID: d.ToolCallID})
	s.running = append(s.running, i)
}

func (s *State) findTool(id string) int {
	for i := len(s.Rows) - 1; i >= 0; i-- {
		if s.Rows[i].Kind == RowTool && s.Rows[i].MessageID == id {
			return i
		}
	}
	return -1
}

// ---- questions ----

func (s *State) openRequest(req protocol.UserInputRequest) {
	if s.Pending != nil && s.Pending.Request.RequestID == req.RequestID {
		// The same request again (a re-subscribe's pendingInput): its
		// count of queued questions is the one now.
		s.Pending.Request.Queued = req.Queued
		return
	}
	s.Pending = &Pending{Request: req, Since: s.opts.Now()}
	if t, err := time.Parse(time.RFC3339, req.ExpiresAt); err == nil {
		s.Pending.ExpiresAt = t
	} else if req.ExpiresAt != "" {
		s.opts.Logger.Warn("a question's expiresAt is not RFC 3339; showing no countdown", "conversation", s.ID, "expiresAt", req.ExpiresAt)
	}
	s.deadline()
	s.listing()
}

// RecordServerTime records the relay's clock, serverTime (RFC 3339) read at
// at on this client's clock, and moves the open question's deadline to the
// skew measured. Apply calls it for copilot:subscribed with the time of the
// fold; a client that knows when the frame arrived may call it with that.
// An unreadable or absent serverTime (an older relay) changes nothing.
func (s *State) RecordServerTime(serverTime string, at time.Time) {
	t, err := time.Parse(time.RFC3339, serverTime)
	if err != nil {
		return
	}
	s.Skew = t.Sub(at)
	s.deadline()
}

// deadline sets the open question's deadline on this client's clock.
func (s *State) deadline() {
	if p := s.Pending; p != nil {
		p.Deadline = time.Time{}
		if !p.ExpiresAt.IsZero() {
			p.Deadline = p.ExpiresAt.Add(-s.Skew)
		}
	}
}

func (s *State) closeRequest(requestID string) {
	if s.Pending != nil && s.Pending.Request.RequestID == requestID {
		s.Pending = nil
		s.listing()
	}
}

func (s *State) listing() {
	if s.upd != nil {
		s.upd.Listing = true
	}
}

// ---- assistant text ----

// delta streams text into an assistant message.
func (s *State) delta(id, text string) {
	m, ok := s.msgs[id]
	if !ok || m.done {
		m = &message{id: id, split: newSplitter(), tailRow: -1, lastRow: -1}
		s.msgs[id] = m
		s.unfinished = append(s.unfinished, m)
	}
	if m.lastRow >= 0 && m.lastRow != len(s.Rows)-1 {
		// Something else was shown since this message last wrote: what
		// follows goes below it.
		s.cut(m)
	}
	for _, b := range m.split.write(text) {
		s.placeBlock(m, b, true)
	}
	if b, ok := m.split.tail(); ok {
		s.placeBlock(m, b, false)
	}
	if s.upd != nil && text != "" {
		s.upd.Text += text
		s.upd.MessageID = id
	}
}

// placeBlock shows b in the message's tail row (creating it), finished or not.
func (s *State) placeBlock(m *message, b block, done bool) {
	r := Row{Kind: RowText, Text: b.text, Done: done}
	if b.code {
		r.Kind = RowCode
		r.Lang, r.Text = CodeBody(b.text)
	}
	if m.tailRow >= 0 {
		old := s.Rows[m.tailRow]
		r.MessageID = old.MessageID
		if old.Kind == r.Kind && old.Text == r.Text && old.Lang == r.Lang && old.Done == r.Done {
			m.lastRow = m.tailRow
			if done {
				m.tailRow = -1
			}
			return
		}
		s.setRow(m.tailRow, r)
		m.lastRow = m.tailRow
	} else {
		r.MessageID = m.id
		m.lastRow = s.appendRow(r)
		m.tailRow = m.lastRow
	}
	if done {
		m.tailRow = -1
	}
}

// cut ends a message's open block where it stands, marking it done.
func (s *State) cut(m *message) {
	if b, ok := m.split.cut(); ok {
		if m.tailRow >= 0 {
			s.placeBlock(m, b, true)
		}
	}
	m.tailRow = -1
	m.lastRow = -1
}

// wholeMessage handles copilot:message, the whole text of a message: an
// agent that streams no deltas shows it here; one that did gets any text
// its deltas missed.
func (s *State) wholeMessage(id, content string) {
	m, ok := s.msgs[id]
	if !ok || m.done {
		if content == "" {
			return
		}
		s.delta(id, content)
		m = s.msgs[id]
	} else if streamed := m.split.text(); streamed != content {
		if strings.HasPrefix(content, streamed) {
			s.delta(id, content[len(streamed):])
		} else {
			s.opts.Logger.Warn("assistant message differs from its streamed deltas; keeping what was streamed",
				"conversation", s.ID, "message", id, "streamed_bytes", len(streamed), "message_bytes", len(content))
		}
	}
	if content != "" {
		s.turnOutput = true
	}
	s.finishMessage(m)
}

// finishMessage marks a message's tail row done.
func (s *State) finishMessage(m *message) {
	if m.done {
		return
	}
	if m.tailRow >= 0 {
		if b, ok := m.split.tail(); ok {
			s.placeBlock(m, b, true)
		}
	}
	m.tailRow = -1
	m.done = true
}

func (s *State) finishMessages() {
	for _, m := range s.unfinished {
		s.finishMessage(m)
	}
	clear(s.unfinished)
	s.unfinished = s.unfinished[:0]
	s.endThoughts()
	if s.planRow >= 0 && !s.Rows[s.planRow].Done {
		r := s.Rows[s.planRow]
		r.Done = true
		s.setRow(s.planRow, r)
	}
}

// ---- the agent's reasoning and plan ----

// endThoughts marks the runs of reasoning being streamed done.
func (s *State) endThoughts() {
	for id, th := range s.thoughts {
		if r := s.Rows[th.row]; !r.Done {
			r.Done = true
			s.setRow(th.row, r)
		}
		delete(s.thoughts, id)
	}
}

// reasoning streams the agent's reasoning into its own row, one per
// reasoning message: never into the reply's rows.
func (s *State) reasoning(id, text string) {
	th, ok := s.thoughts[id]
	if !ok {
		th = &thought{row: -1}
		s.thoughts[id] = th
	}
	th.text.WriteString(text)
	// strings.Builder's String does not copy: a long run of reasoning
	// costs its length once, not once per chunk.
	r := Row{Kind: RowReasoning, Text: th.text.String(), MessageID: id}
	if th.row < 0 {
		th.row = s.appendRow(r)
		return
	}
	s.setRow(th.row, r)
}

// agentPlan shows the agent's plan: a turn's first one as a new row, each
// later one of the turn in that row, replacing the entries.
func (s *State) agentPlan(entries []protocol.PlanEntry) {
	r := Row{Kind: RowAgentPlan, Text: PlanProgress(entries), more: &rowMore{entries: slices.Clone(entries)}}
	if s.planRow >= 0 && s.planRow > s.turnStart && !s.Rows[s.planRow].Done {
		r.MessageID = s.Rows[s.planRow].MessageID
		s.setRow(s.planRow, r)
		return
	}
	if len(entries) == 0 {
		// An empty plan and none before it in the turn: nothing to show
		// (copilot sends one when its model clears its todo list).
		return
	}
	r.MessageID = fmt.Sprintf("agent-plan-%d", len(s.Rows))
	s.planRow = s.appendRow(r)
}
