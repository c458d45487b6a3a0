// Package model is the window's state, fed by the relay client's events and
// read by the Fyne widgets. It imports no Fyne: the client's goroutine applies
// events here under a lock, and the UI goroutine takes what changed once per
// frame (Store.Take), so no widget is ever touched off the UI goroutine and a
// burst of deltas costs one refresh.
package model

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// RowKind says what a transcript row shows.
type RowKind int

const (
	RowUser   RowKind = iota // the user's prompt
	RowText                  // one markdown block of an assistant message
	RowCode                  // one fenced code block of an assistant message
	RowTool                  // a tool call
	RowStatus                // how a turn ended
	RowMode                  // the mode changed here
	RowNote                  // something that happened (question timed out, answered, refused…)
)

// Tool call states shown on a RowTool.
const (
	ToolRunning  = "running"
	ToolApproved = "approved"
	ToolDenied   = "denied by plan"
	ToolFailed   = "failed"
)

// Note tones for RowNote.
const (
	NoteInfo  = "info"
	NoteWarn  = "warning"
	NoteError = "error"
)

// RejectedText is what a rejected turn says under its kept partial text
// (seed 003, requirement 6).
const RejectedText = "Rejected. Agent response cancelled."

// Row is one transcript row. Rows are values: the UI keeps copies.
type Row struct {
	Kind RowKind
	// Text: the prompt (RowUser), markdown (RowText), code without its
	// fences (RowCode), the line to show (RowStatus, RowMode, RowNote), the
	// tool's arguments in short (RowTool).
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
	// Mode is the mode of a user turn, or the new mode of a RowMode.
	Mode protocol.Mode
	// MessageID is the assistant message a text or code block belongs to.
	MessageID string
	// Done is true when the row will not change again.
	Done bool
	// Version grows each time the row changes.
	Version uint32
}

// Pending is an open input request of a conversation.
type Pending struct {
	Request protocol.UserInputRequest
	// Since is when this window first saw the request; Deadline is Since
	// plus the relay's input timeout (the protocol carries no deadline, so
	// this is the window's estimate).
	Since    time.Time
	Deadline time.Time // zero when the relay waits forever
	// Answering is true while this window's answer is on its way; the modal
	// hides, and shows again if the relay refuses the answer.
	Answering bool
	// Hint is the relay's reason for refusing the last answer.
	Hint string
}

// Quota is one quota snapshot of a copilot:quota.
type Quota struct {
	Name             string
	Unlimited        bool
	Entitlement      float64
	Used             float64
	RemainingPercent float64
	HasRemaining     bool
	ResetDate        string
}

// ModelMetric is one model's totals from copilot:shutdown.
type ModelMetric struct {
	Model        string
	Requests     float64
	Cost         float64
	InputTokens  int64
	OutputTokens int64
}

// Usage is what the usage bar shows for a conversation.
type Usage struct {
	Model            string
	Cost             *float64 // the premium-request multiplier
	CacheReadTokens  *int64
	CacheWriteTokens *int64
	Quotas           []Quota
	// Session totals, from copilot:shutdown.
	HaveTotals           bool
	TotalPremiumRequests float64
	Models               []ModelMetric
}

// Empty reports whether nothing has been reported yet.
func (u Usage) Empty() bool {
	return u.Model == "" && u.Cost == nil && u.CacheReadTokens == nil && u.CacheWriteTokens == nil && len(u.Quotas) == 0 && !u.HaveTotals
}

// Conversation is one conversation's state. Its fields are read through
// Take; only the Store changes them.
type Conversation struct {
	ID        string
	Title     string
	UpdatedAt time.Time
	Mode      protocol.Mode
	Streaming bool
	// Synced is true once copilot:subscribed arrived: the history has been
	// replayed and what follows is live.
	Synced bool
	// OnRelay is true when the relay knows the conversation (it listed it
	// or sent an event of it); a conversation made with New is not on the
	// relay until its first prompt.
	OnRelay bool
	Rows    []Row
	// turnOutput is true once the running turn showed any text or tool call.
	turnOutput bool
	Pending    *Pending
	Usage      Usage
	// lastError is the last copilot:error of the running turn.
	lastError string

	msgs     map[string]*message
	answered map[string]string // requestId → answer this window sent
	changed  map[int]struct{}  // rows changed since the UI last took them
	rebuilt  bool              // rows were replaced wholesale
	titled   bool              // the title came from the relay or a prompt
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
}

// Thinking is true while a turn streams and has shown nothing yet.
func (c *Conversation) Thinking() bool {
	return c.Streaming && c.Pending == nil && !c.turnOutput
}

// Options configures a Store.
type Options struct {
	// InputTimeout is the relay's input request timeout, for the countdown
	// (0: the default 5 minutes, PROTOCOL.md; negative: no timeout, and
	// Pending.Deadline stays zero).
	InputTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnChange is called after every change, outside the lock. The window
	// uses it to schedule a frame.
	OnChange func()
	Logger   *slog.Logger
}

// Store holds every conversation the window knows. Its methods are safe for
// concurrent use.
type Store struct {
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	convs  map[string]*Conversation
	conn   client.StateChange
	notice string // the last relay error not tied to a conversation
	// sidebarChanged is true when the list of conversations or an entry's
	// title or markers changed since the UI last took the sidebar.
	sidebarChanged bool
	connChanged    bool
}

// NewStore returns an empty store.
func NewStore(opts Options) *Store {
	if opts.InputTimeout == 0 {
		opts.InputTimeout = 5 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Store{
		opts:  opts,
		log:   opts.Logger,
		convs: map[string]*Conversation{},
		conn:  client.StateChange{State: client.StateConnecting},
	}
}

func (s *Store) changed() {
	if f := s.opts.OnChange; f != nil {
		f()
	}
}

// conv returns the conversation id, creating it. s.mu is held.
func (s *Store) conv(id string) *Conversation {
	c, ok := s.convs[id]
	if !ok {
		c = &Conversation{
			ID:        id,
			Title:     "New conversation",
			Mode:      protocol.ModeAct,
			UpdatedAt: s.opts.Now(),
			msgs:      map[string]*message{},
			answered:  map[string]string{},
			changed:   map[int]struct{}{},
		}
		s.convs[id] = c
		s.sidebarChanged = true
	}
	return c
}

// Create adds a new, empty conversation (the user pressed New).
func (s *Store) Create(id string) {
	s.mu.Lock()
	s.conv(id)
	s.mu.Unlock()
	s.changed()
}

// Remove forgets a conversation.
func (s *Store) Remove(id string) {
	s.mu.Lock()
	delete(s.convs, id)
	s.sidebarChanged = true
	s.mu.Unlock()
	s.changed()
}

// OnRelay reports whether the relay knows the conversation.
func (s *Store) OnRelay(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[id]
	return ok && c.OnRelay
}

// Has reports whether the store knows the conversation.
func (s *Store) Has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.convs[id]
	return ok
}

// appendRow adds a row. s.mu is held.
func (c *Conversation) appendRow(r Row) int {
	r.Version = 1
	c.Rows = append(c.Rows, r)
	i := len(c.Rows) - 1
	c.changed[i] = struct{}{}
	return i
}

// setRow replaces row i. s.mu is held.
func (c *Conversation) setRow(i int, r Row) {
	r.Version = c.Rows[i].Version + 1
	c.Rows[i] = r
	c.changed[i] = struct{}{}
}

// Apply folds one client event into the state.
func (s *Store) Apply(ev client.Event) {
	s.mu.Lock()
	s.apply(ev)
	s.mu.Unlock()
	s.changed()
}

func (s *Store) apply(ev client.Event) {
	if id := ev.ConversationID(); id != "" && ev.Type != protocol.TypeError && ev.Type != protocol.TypeDeleted {
		s.conv(id).OnRelay = true
	}
	switch d := ev.Data.(type) {
	case *client.StateChange:
		s.conn = *d
		s.connChanged = true
	case *client.Reset:
		c := s.conv(d.ConversationID)
		c.Rows = nil
		c.msgs = map[string]*message{}
		c.changed = map[int]struct{}{}
		c.rebuilt = true
		c.Pending = nil
		c.Streaming = false
		c.Synced = false
		c.Usage = Usage{}
	case *protocol.Subscribed:
		c := s.conv(d.ConversationID)
		c.Mode = d.Mode
		if c.Streaming != d.Streaming {
			s.sidebarChanged = true
		}
		c.Streaming = d.Streaming
		c.Synced = true
		if !d.Streaming {
			s.finishMessages(c)
		}
		if d.PendingInput != nil {
			s.openRequest(c, *d.PendingInput)
		} else if c.Pending != nil {
			c.Pending = nil
			s.sidebarChanged = true
		}
	case *protocol.Conversations:
		for _, info := range d.Conversations {
			c := s.conv(info.ConversationID)
			c.OnRelay = true
			if info.Title != "" {
				c.Title, c.titled = info.Title, true
			}
			if t, err := time.Parse(time.RFC3339, info.UpdatedAt); err == nil {
				c.UpdatedAt = t
			}
			if !c.Synced {
				c.Streaming = info.Streaming
				if info.Mode.Valid() {
					c.Mode = info.Mode
				}
			}
		}
		s.sidebarChanged = true
	case *protocol.Deleted:
		delete(s.convs, d.ConversationID)
		s.sidebarChanged = true
	case *protocol.UserMessage:
		c := s.conv(d.ConversationID)
		s.finishMessages(c)
		mode := d.Mode
		if !mode.Valid() {
			mode = protocol.ModeAct
		}
		// copilot:send carries the mode the turn runs in.
		if mode != c.Mode {
			c.Mode = mode
			s.sidebarChanged = true
		}
		c.appendRow(Row{Kind: RowUser, Text: d.Content, Mode: mode, Done: true})
		c.Streaming = true
		c.turnOutput = false
		c.lastError = ""
		c.UpdatedAt = s.opts.Now()
		if !c.titled {
			c.Title, c.titled = titleFrom(d.Content), true
		}
		s.sidebarChanged = true
	case *protocol.Delta:
		c := s.conv(d.ConversationID)
		s.delta(c, d.MessageID, d.Content)
		c.turnOutput = true
	case *protocol.Message:
		c := s.conv(d.ConversationID)
		s.wholeMessage(c, d.MessageID, d.Content)
	case *protocol.ToolStart:
		c := s.conv(d.ConversationID)
		c.turnOutput = true
		c.appendRow(Row{Kind: RowTool, Title: d.ToolName, Text: summarizeArgs(d.Arguments), State: ToolRunning, MessageID: d.ToolCallID})
	case *protocol.ToolEnd:
		c := s.conv(d.ConversationID)
		c.turnOutput = true
		state := ToolApproved
		switch {
		case d.Denied:
			state = ToolDenied
		case !d.Success:
			state = ToolFailed
		}
		i := c.findTool(d.ToolCallID)
		if i < 0 {
			c.appendRow(Row{Kind: RowTool, Title: d.ToolCallID, State: state, Detail: d.Result, MessageID: d.ToolCallID, Done: true})
			break
		}
		r := c.Rows[i]
		r.State, r.Detail, r.Done = state, d.Result, true
		c.setRow(i, r)
	case *protocol.ModeChanged:
		c := s.conv(d.ConversationID)
		if d.Mode != c.Mode {
			c.Mode = d.Mode
			if len(c.Rows) > 0 {
				c.appendRow(Row{Kind: RowMode, Mode: d.Mode, Text: modeChangeText(d.Mode, c.Streaming), Done: true})
			}
			s.sidebarChanged = true
		}
	case *protocol.UserInputRequest:
		c := s.conv(d.ConversationID)
		s.openRequest(c, *d)
	case *protocol.UserInputTimeout:
		c := s.conv(d.ConversationID)
		c.appendRow(Row{Kind: RowNote, State: NoteWarn, Done: true,
			Text: fmt.Sprintf("No answer in time: the question %q timed out and the agent goes on without an answer.", oneLine(d.Question, 120))})
		s.closeRequest(c, d.RequestID)
	case *protocol.UserInputClosed:
		c := s.conv(d.ConversationID)
		if c.Pending != nil && c.Pending.Request.RequestID == d.RequestID {
			c.appendRow(Row{Kind: RowNote, State: NoteInfo, Done: true, Text: closedText(c, d)})
		}
		s.closeRequest(c, d.RequestID)
	case *protocol.AgentError:
		c := s.conv(d.ConversationID)
		c.lastError = d.Message
		c.appendRow(Row{Kind: RowNote, State: NoteError, Text: "Agent error: " + d.Message, Done: true})
	case *protocol.Idle:
		c := s.conv(d.ConversationID)
		s.finishMessages(c)
		detail := d.Message
		if detail == "" && d.Status == protocol.StatusError {
			detail = c.lastError
		}
		c.appendRow(Row{Kind: RowStatus, State: d.Status, Text: statusText(d.Status), Detail: detail, Done: true})
		c.Streaming = false
		c.turnOutput = false
		if c.Pending != nil {
			c.Pending = nil
		}
		c.UpdatedAt = s.opts.Now()
		s.sidebarChanged = true
	case *protocol.Quota:
		c := s.conv(d.ConversationID)
		applyQuota(&c.Usage, d)
	case *protocol.Shutdown:
		c := s.conv(d.ConversationID)
		applyShutdown(&c.Usage, d)
	case *protocol.Error:
		s.relayError(d)
	}
}

// relayError shows an `error` message where it belongs.
func (s *Store) relayError(e *protocol.Error) {
	c, ok := s.convs[e.ConversationID]
	if !ok {
		s.notice = "The relay refused a request: " + e.Message
		s.connChanged = true
		return
	}
	if e.Code == protocol.CodeInvalidAnswer && c.Pending != nil {
		c.Pending.Answering = false
		c.Pending.Hint = e.Message
		return
	}
	c.appendRow(Row{Kind: RowNote, State: NoteError, Done: true, Text: "The relay refused the request: " + e.Message})
}

func (s *Store) openRequest(c *Conversation, req protocol.UserInputRequest) {
	if c.Pending != nil && c.Pending.Request.RequestID == req.RequestID {
		return // the same request again (a re-subscribe): keep its deadline
	}
	now := s.opts.Now()
	c.Pending = &Pending{Request: req, Since: now}
	if s.opts.InputTimeout > 0 {
		c.Pending.Deadline = now.Add(s.opts.InputTimeout)
	}
	s.sidebarChanged = true
}

func (s *Store) closeRequest(c *Conversation, requestID string) {
	if c.Pending != nil && c.Pending.Request.RequestID == requestID {
		c.Pending = nil
		s.sidebarChanged = true
	}
}

func closedText(c *Conversation, d *protocol.UserInputClosed) string {
	q := oneLine(c.Pending.Request.Question, 80)
	switch d.Reason {
	case protocol.ClosedAnswered:
		if a, ok := c.answered[d.RequestID]; ok {
			return fmt.Sprintf("You answered %q to %q.", oneLine(a, 80), q)
		}
		return fmt.Sprintf("%q was answered from another window.", q)
	case protocol.ClosedRejected:
		if _, ok := c.answered[d.RequestID]; ok {
			return fmt.Sprintf("You rejected %q.", q)
		}
		return fmt.Sprintf("%q was rejected from another window.", q)
	case protocol.ClosedAborted:
		return fmt.Sprintf("The question %q was withdrawn: the turn was stopped.", q)
	}
	return fmt.Sprintf("The question %q was closed (%s).", q, d.Reason)
}

// MarkAnswering records that this window sent an answer (or a rejection:
// answer "" and rejected true) to the conversation's open request.
func (s *Store) MarkAnswering(convID, requestID, answer string, rejected bool) {
	s.mu.Lock()
	if c, ok := s.convs[convID]; ok {
		if rejected {
			c.answered[requestID] = ""
		} else {
			c.answered[requestID] = answer
		}
		if c.Pending != nil && c.Pending.Request.RequestID == requestID {
			c.Pending.Answering = true
			c.Pending.Hint = ""
		}
	}
	s.mu.Unlock()
	s.changed()
}

// AnswerFailed reopens the request after the answer could not be sent.
func (s *Store) AnswerFailed(convID, requestID, why string) {
	s.mu.Lock()
	if c, ok := s.convs[convID]; ok && c.Pending != nil && c.Pending.Request.RequestID == requestID {
		c.Pending.Answering = false
		c.Pending.Hint = why
	}
	s.mu.Unlock()
	s.changed()
}

// ClearNotice forgets the last relay error not tied to a conversation.
func (s *Store) ClearNotice() {
	s.mu.Lock()
	if s.notice != "" {
		s.notice = ""
		s.connChanged = true
	}
	s.mu.Unlock()
	s.changed()
}

// AddNote adds a note row to a conversation (something the window itself
// wants to say, such as a prompt that could not be sent).
func (s *Store) AddNote(convID, tone, text string) {
	s.mu.Lock()
	c := s.conv(convID)
	c.appendRow(Row{Kind: RowNote, State: tone, Text: text, Done: true})
	s.mu.Unlock()
	s.changed()
}

func (c *Conversation) findTool(id string) int {
	for i := len(c.Rows) - 1; i >= 0; i-- {
		if c.Rows[i].Kind == RowTool && c.Rows[i].MessageID == id {
			return i
		}
	}
	return -1
}

// delta streams text into an assistant message.
func (s *Store) delta(c *Conversation, id, text string) {
	m, ok := c.msgs[id]
	if !ok || m.done {
		m = &message{id: id, split: newSplitter(), tailRow: -1, lastRow: -1}
		c.msgs[id] = m
	}
	if m.lastRow >= 0 && m.lastRow != len(c.Rows)-1 {
		// Something else was shown since this message last wrote: what
		// follows goes below it.
		s.cut(c, m)
	}
	for _, b := range m.split.write(text) {
		s.placeBlock(c, m, b, true)
	}
	if b, ok := m.split.tail(); ok {
		s.placeBlock(c, m, b, false)
	}
}

// placeBlock shows b in the message's tail row (creating it), finished or not.
func (s *Store) placeBlock(c *Conversation, m *message, b block, done bool) {
	r := Row{Kind: RowText, Text: b.text, Done: done}
	if b.code {
		r.Kind = RowCode
		r.Lang, r.Text = CodeBody(b.text)
	}
	if m.tailRow >= 0 {
		old := c.Rows[m.tailRow]
		r.MessageID = old.MessageID
		if old.Kind == r.Kind && old.Text == r.Text && old.Lang == r.Lang && old.Done == r.Done {
			m.lastRow = m.tailRow
			if done {
				m.tailRow = -1
			}
			return
		}
		c.setRow(m.tailRow, r)
		m.lastRow = m.tailRow
	} else {
		r.MessageID = m.id
		m.lastRow = c.appendRow(r)
		m.tailRow = m.lastRow
	}
	if done {
		m.tailRow = -1
	}
}

// cut ends a message's open block where it stands, marking it done.
func (s *Store) cut(c *Conversation, m *message) {
	if b, ok := m.split.cut(); ok {
		if m.tailRow >= 0 {
			s.placeBlock(c, m, b, true)
		}
	}
	m.tailRow = -1
	m.lastRow = -1
}

// wholeMessage handles copilot:message, the whole text of a message.
func (s *Store) wholeMessage(c *Conversation, id, content string) {
	m, ok := c.msgs[id]
	if !ok || m.done {
		if content == "" {
			return
		}
		s.delta(c, id, content)
		m = c.msgs[id]
	} else if streamed := m.split.text(); streamed != content {
		if strings.HasPrefix(content, streamed) {
			s.delta(c, id, content[len(streamed):])
		} else {
			s.log.Warn("assistant message differs from its streamed deltas; keeping what was streamed",
				"conversation", c.ID, "message", id, "streamed_bytes", len(streamed), "message_bytes", len(content))
		}
	}
	if content != "" {
		c.turnOutput = true
	}
	s.finishMessage(c, m)
}

// finishMessage marks a message's tail row done.
func (s *Store) finishMessage(c *Conversation, m *message) {
	if m.done {
		return
	}
	if m.tailRow >= 0 {
		if b, ok := m.split.tail(); ok {
			s.placeBlock(c, m, b, true)
		}
	}
	m.tailRow = -1
	m.done = true
}

func (s *Store) finishMessages(c *Conversation) {
	for _, m := range c.msgs {
		s.finishMessage(c, m)
	}
}

// ---- reading ----

// Entry is one conversation in the sidebar.
type Entry struct {
	ID        string
	Title     string
	Mode      protocol.Mode
	Streaming bool
	Waiting   bool      // an input request is open
	Deadline  time.Time // when it times out (estimate)
	UpdatedAt time.Time
}

// View is what the window shows of the current conversation.
type View struct {
	ID        string
	Exists    bool
	Title     string
	Mode      protocol.Mode
	Streaming bool
	Thinking  bool
	Synced    bool
	OnRelay   bool
	Pending   *Pending // a copy
	Usage     Usage
	NumRows   int
	// Full is true when Rows holds every row (the first take, a switch, or
	// a rebuild); otherwise Rows holds only the changed ones.
	Full    bool
	Rows    []Row
	Changed []int // indexes of Rows when !Full
}

// Frame is everything the UI takes in one go.
type Frame struct {
	Conn           client.StateChange
	Notice         string
	ConnChanged    bool
	SidebarChanged bool
	Sidebar        []Entry // when SidebarChanged
	Conv           View
}

// Take returns what changed since the last Take for the conversation
// current (all of it when full is true) and clears the change marks.
func (s *Store) Take(current string, full bool) Frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := Frame{Conn: s.conn, Notice: s.notice, ConnChanged: s.connChanged, SidebarChanged: s.sidebarChanged || full}
	s.connChanged = false
	if f.SidebarChanged {
		f.Sidebar = s.sidebar()
		s.sidebarChanged = false
	}
	c, ok := s.convs[current]
	if !ok {
		f.Conv = View{ID: current, Full: true}
		return f
	}
	v := View{
		ID: c.ID, Exists: true, Title: c.Title, Mode: c.Mode, Streaming: c.Streaming,
		Thinking: c.Thinking(), Synced: c.Synced, OnRelay: c.OnRelay, Usage: c.Usage, NumRows: len(c.Rows),
	}
	v.Usage.Quotas = slices.Clone(c.Usage.Quotas)
	v.Usage.Models = slices.Clone(c.Usage.Models)
	if c.Pending != nil {
		p := *c.Pending
		p.Request.Choices = slices.Clone(p.Request.Choices)
		v.Pending = &p
	}
	if full || c.rebuilt {
		v.Full = true
		v.Rows = slices.Clone(c.Rows)
	} else if len(c.changed) > 0 {
		v.Changed = make([]int, 0, len(c.changed))
		for i := range c.changed {
			v.Changed = append(v.Changed, i)
		}
		sort.Ints(v.Changed)
		v.Rows = make([]Row, len(v.Changed))
		for k, i := range v.Changed {
			v.Rows[k] = c.Rows[i]
		}
	}
	clear(c.changed)
	c.rebuilt = false
	f.Conv = v
	return f
}

// sidebar lists conversations, most recently active first. s.mu is held.
func (s *Store) sidebar() []Entry {
	out := make([]Entry, 0, len(s.convs))
	for _, c := range s.convs {
		e := Entry{ID: c.ID, Title: c.Title, Mode: c.Mode, Streaming: c.Streaming, UpdatedAt: c.UpdatedAt}
		if c.Pending != nil {
			e.Waiting, e.Deadline = true, c.Pending.Deadline
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].UpdatedAt.Equal(out[j].UpdatedAt) {
			return out[i].UpdatedAt.After(out[j].UpdatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Transcript returns the conversation's rows (a copy), for copying text.
func (s *Store) Transcript(id string) []Row {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.convs[id]; ok {
		return slices.Clone(c.Rows)
	}
	return nil
}

// MessageText returns the whole markdown of an assistant message so far.
func (s *Store) MessageText(convID, messageID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.convs[convID]; ok {
		if m, ok := c.msgs[messageID]; ok {
			return m.split.text()
		}
	}
	return ""
}

// State returns the connection state.
func (s *Store) State() client.StateChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// ---- text helpers ----

func titleFrom(prompt string) string {
	t := oneLine(prompt, 48)
	if t == "" {
		return "Untitled"
	}
	return t
}

// oneLine returns the first non-empty line of s, cut to max runes.
func oneLine(s string, max int) string {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > max {
			r := []rune(line)
			return strings.TrimSpace(string(r[:max-1])) + "…"
		}
		return line
	}
	return ""
}

func statusText(status string) string {
	switch status {
	case protocol.StatusCompleted:
		return "Completed"
	case protocol.StatusAborted:
		return "Stopped. The agent's response so far is kept above."
	case protocol.StatusRejected:
		return RejectedText
	case protocol.StatusError:
		return "The turn failed."
	}
	return "Ended: " + status
}

func modeChangeText(mode protocol.Mode, streaming bool) string {
	when := "from the next turn"
	if streaming {
		when = "from the next tool call"
	}
	if mode == protocol.ModePlan {
		return "Switched to Plan: every tool call is denied " + when + "."
	}
	return "Switched to Act: tool calls run " + when + "."
}

// summarizeArgs renders tool arguments on one short line.
func summarizeArgs(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err == nil {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			v := obj[k]
			var vs string
			if str, ok := v.(string); ok {
				vs = str
			} else {
				b, _ := json.Marshal(v)
				vs = string(b)
			}
			if len(keys) == 1 {
				parts = append(parts, vs)
			} else {
				parts = append(parts, k+"="+vs)
			}
		}
		return oneLine(strings.Join(parts, " "), 160)
	}
	return oneLine(string(raw), 160)
}

// ---- usage ----

func applyQuota(u *Usage, q *protocol.Quota) {
	if q.Model != "" {
		u.Model = q.Model
	}
	if q.Cost != nil {
		u.Cost = q.Cost
	}
	if q.CacheReadTokens != nil {
		u.CacheReadTokens = q.CacheReadTokens
	}
	if q.CacheWriteTokens != nil {
		u.CacheWriteTokens = q.CacheWriteTokens
	}
	var snaps map[string]struct {
		IsUnlimitedEntitlement bool     `json:"isUnlimitedEntitlement"`
		EntitlementRequests    float64  `json:"entitlementRequests"`
		UsedRequests           float64  `json:"usedRequests"`
		RemainingPercentage    *float64 `json:"remainingPercentage"`
		ResetDate              string   `json:"resetDate"`
	}
	if err := json.Unmarshal(q.QuotaSnapshots, &snaps); err != nil || len(snaps) == 0 {
		return // BYOK and the like report {}: keep the last known quotas
	}
	u.Quotas = u.Quotas[:0]
	for name, sn := range snaps {
		qq := Quota{Name: name, Unlimited: sn.IsUnlimitedEntitlement, Entitlement: sn.EntitlementRequests, Used: sn.UsedRequests, ResetDate: sn.ResetDate}
		if sn.RemainingPercentage != nil {
			qq.RemainingPercent, qq.HasRemaining = *sn.RemainingPercentage, true
		}
		u.Quotas = append(u.Quotas, qq)
	}
	sort.Slice(u.Quotas, func(i, j int) bool {
		// premium_interactions first: it is the one people pay for.
		pi, pj := u.Quotas[i].Name == "premium_interactions", u.Quotas[j].Name == "premium_interactions"
		if pi != pj {
			return pi
		}
		return u.Quotas[i].Name < u.Quotas[j].Name
	})
}

func applyShutdown(u *Usage, sd *protocol.Shutdown) {
	u.HaveTotals = true
	u.TotalPremiumRequests = sd.TotalPremiumRequests
	var metrics map[string]struct {
		Requests struct {
			Count float64 `json:"count"`
			Cost  float64 `json:"cost"`
		} `json:"requests"`
		Usage struct {
			InputTokens  int64 `json:"inputTokens"`
			OutputTokens int64 `json:"outputTokens"`
		} `json:"usage"`
	}
	u.Models = u.Models[:0]
	if err := json.Unmarshal(sd.ModelMetrics, &metrics); err != nil {
		return
	}
	for name, m := range metrics {
		u.Models = append(u.Models, ModelMetric{Model: name, Requests: m.Requests.Count, Cost: m.Requests.Cost, InputTokens: m.Usage.InputTokens, OutputTokens: m.Usage.OutputTokens})
	}
	sort.Slice(u.Models, func(i, j int) bool { return u.Models[i].Model < u.Models[j].Model })
}
