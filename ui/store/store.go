// Package store is the window's state: every conversation the window knows,
// each folded by package conversation, plus the connection state, the
// conversation list and the change marks that let the window redraw only
// what changed. It imports no Fyne: the client's goroutine applies events
// here under a lock, and the UI goroutine takes what changed once per frame
// (Store.Take), so no widget is ever touched off the UI goroutine and a
// burst of deltas costs one refresh.
package store

import (
	"cmp"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// Options configures a Store.
type Options struct {
	// Options is each conversation's (conversation.New): who the window is
	// on the relay (Self, and Identity as its client learns it), the
	// clock and the logger.
	conversation.Options
	// OnChange is called after every change, outside the lock. The window
	// uses it to schedule a frame.
	OnChange func()
	// FullRows bounds a full take (Take, View.Full) to the conversation's
	// last FullRows rows (0: every row); Rows gives older ones on demand.
	// The window holds that many rows and more as the user scrolls up: a
	// 5,000-message conversation is 17,000 rows, and a copy of them all
	// for every switch, every frame's list layout over them, cost memory
	// and time for rows nobody looks at.
	FullRows int
}

// entry is one conversation and what changed in it since the window last
// took it.
type entry struct {
	*conversation.State
	changed map[int]struct{} // rows changed since the UI last took them
	rebuilt bool             // rows were replaced wholesale
	// replaying is true from the window's first subscription (Replaying)
	// until the replay of the history ends (Synced): the history's
	// events are folded as they come, and until its end the window shows
	// the conversation as its list entry, listed, says: not the turns,
	// questions and usage of the history as they pass.
	replaying bool
	listed    protocol.ConversationInfo
}

// Store holds every conversation the window knows. Its methods are safe for
// concurrent use.
type Store struct {
	opts Options

	mu sync.Mutex // guards everything below
	// convs is every conversation by id.
	convs  map[string]*entry
	conn   client.StateChange
	notice string // the last relay error not tied to a conversation
	// sidebarChanged is true when the list of conversations or an entry's
	// title or markers changed since the UI last took the sidebar.
	sidebarChanged bool
	connChanged    bool
	// moreCursor asks the relay for the list's next page ("" at its end).
	moreCursor string
	// budget is the relay's credit budget, nil when it has none.
	budget *protocol.Budget
	// workspaces is the relay's last answer to copilot:workspaces (nil:
	// none yet).
	workspaces *protocol.Workspaces
	// role is the role of the window's token, as the relay's list says
	// (protocol.RoleOwner until it says otherwise).
	role string
}

// NewStore returns an empty store.
func NewStore(opts Options) *Store {
	return &Store{
		opts:  opts,
		convs: map[string]*entry{},
		conn:  client.StateChange{State: client.StateConnecting},
		role:  protocol.RoleOwner,
	}
}

// roleOf is the role a list names: only a viewer's or a controller's
// names one, the owner's none.
func roleOf(role string) string {
	if role == protocol.RoleViewer || role == protocol.RoleController {
		return role
	}
	return protocol.RoleOwner
}

// Role is the role of the window's token on the relay.
func (s *Store) Role() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.role
}

func (s *Store) changed() {
	if f := s.opts.OnChange; f != nil {
		f()
	}
}

// convLocked returns the conversation id, creating it. s.mu is held.
func (s *Store) convLocked(id string) *entry {
	c, ok := s.convs[id]
	if !ok {
		c = &entry{
			State:   conversation.New(id, s.opts.Options),
			changed: map[int]struct{}{},
		}
		s.convs[id] = c
		s.sidebarChanged = true
	}
	return c
}

// note records what an Update changed. s.mu is held.
func (s *Store) noteLocked(c *entry, u conversation.Update) {
	if u.Rebuilt {
		c.rebuilt = true
		clear(c.changed)
	}
	for _, i := range u.Rows {
		c.changed[i] = struct{}{}
	}
	if u.Listing {
		s.sidebarChanged = true
	}
}

// Create adds a new, empty conversation (the user pressed New).
func (s *Store) Create(id string) {
	s.mu.Lock()
	s.convLocked(id)
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

// Synced reports whether the relay has replayed the conversation to this
// window (copilot:subscribed arrived since it was subscribed or reset).
func (s *Store) Synced(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[id]
	return ok && c.Synced
}

// Has reports whether the store knows the conversation.
func (s *Store) Has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.convs[id]
	return ok
}

// Apply folds one client event into the state.
func (s *Store) Apply(ev client.Event) {
	s.mu.Lock()
	s.applyLocked(ev)
	s.mu.Unlock()
	s.changed()
}

func (s *Store) applyLocked(ev client.Event) {
	switch d := ev.Data.(type) {
	case *client.StateChange:
		s.conn = *d
		s.connChanged = true
		return
	case *protocol.Conversations:
		for _, info := range d.Conversations {
			c := s.convLocked(info.ConversationID)
			c.Listed(info)
			c.listed = info
		}
		s.moreCursor = d.NextCursor
		s.sidebarChanged = true
		if role := roleOf(d.Role); role != s.role {
			s.role = role
			s.connChanged = true
		}
		return
	case *protocol.Workspaces:
		w := *d
		w.Roots, w.Recent = slices.Clone(d.Roots), slices.Clone(d.Recent)
		s.workspaces = &w
		s.connChanged = true
		return
	case *protocol.Budget:
		b := *d
		s.budget = &b
		s.connChanged = true
		return
	case *protocol.Deleted:
		delete(s.convs, d.ConversationID)
		s.sidebarChanged = true
		return
	case *protocol.ConversationChanged:
		if d.Deleted {
			delete(s.convs, d.ConversationID)
			s.sidebarChanged = true
			return
		}
		s.convLocked(d.ConversationID).listed = d.ConversationInfo
	case *protocol.Error:
		if _, ok := s.convs[d.ConversationID]; !ok {
			s.notice = "The relay refused a request: " + d.Message
			s.connChanged = true
			return
		}
	}
	if id := ev.ConversationID(); id != "" {
		c := s.convLocked(id)
		s.noteLocked(c, c.Apply(ev))
		if c.Synced && c.replaying {
			c.replaying = false
			s.sidebarChanged = true
		}
	}
}

// Replaying records that the window subscribed to a conversation from its
// start: until the replay ends, it is shown as its list entry says (entry.replaying).
func (s *Store) Replaying(id string) {
	s.mu.Lock()
	if c, ok := s.convs[id]; ok && !c.Synced {
		c.replaying = true
	}
	s.mu.Unlock()
}

// shown is what the window shows of c's mode, turn and question: while the
// replay of its history goes on, what its list entry said.
func (c *entry) shown() (mode protocol.Mode, streaming, thinking bool, pending *conversation.Pending, agent string) {
	if !c.replaying {
		return c.Mode, c.Streaming, c.Thinking(), c.Pending, c.Agent
	}
	mode = protocol.ModeAct
	if c.listed.Mode.Valid() {
		mode = c.listed.Mode
	}
	return mode, c.listed.Streaming, c.listed.Streaming, nil, cmp.Or(c.listed.Agent, c.Agent)
}

// MarkAnswering records that this window sent an answer (or a rejection:
// answer "" and rejected true) to the conversation's open request.
func (s *Store) MarkAnswering(convID, requestID, answer string, rejected bool) {
	s.mu.Lock()
	if c, ok := s.convs[convID]; ok {
		c.MarkAnswering(requestID, answer, rejected)
	}
	s.mu.Unlock()
	s.changed()
}

// AnswerFailed reopens the request after the answer could not be sent.
func (s *Store) AnswerFailed(convID, requestID, why string) {
	s.mu.Lock()
	if c, ok := s.convs[convID]; ok {
		c.AnswerFailed(requestID, why)
	}
	s.mu.Unlock()
	s.changed()
}

// Workspaces is the relay's last answer to copilot:workspaces (a copy;
// nil before one came).
func (s *Store) Workspaces() *protocol.Workspaces {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.workspaces == nil {
		return nil
	}
	w := *s.workspaces
	w.Roots, w.Recent = slices.Clone(w.Roots), slices.Clone(w.Recent)
	return &w
}

// WantWorkspace records the folder the user chose for a new conversation
// (conversation.State.WantWorkspace); Wanted is what its first send
// carries.
func (s *Store) WantWorkspace(convID string, ws protocol.WorkspaceRequest) {
	s.mu.Lock()
	c := s.convLocked(convID)
	c.WantWorkspace(ws)
	s.sidebarChanged = true
	s.mu.Unlock()
	s.changed()
}

// Wanted: see WantWorkspace.
func (s *Store) Wanted(convID string) *protocol.WorkspaceRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.convs[convID]; ok {
		return c.Wanted()
	}
	return nil
}

// Workspace is where the relay fixed the conversation's folder (a copy),
// nil before its first prompt or for a conversation the store lacks.
func (s *Store) Workspace(convID string) *protocol.Workspace {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.convs[convID]; ok && c.Workspace != nil {
		ws := *c.Workspace
		return &ws
	}
	return nil
}

// AskDiff records that the window asks for the diff of path in the
// changes card of checkpoint, and reports whether to send the request
// (conversation.State.AskDiff).
func (s *Store) AskDiff(convID, checkpoint, path string) bool {
	s.mu.Lock()
	ask := false
	if c, ok := s.convs[convID]; ok {
		s.trackLocked(c, func() { ask = c.AskDiff(checkpoint, path) })
	}
	s.mu.Unlock()
	s.changed()
	return ask
}

// MarkRestoring records that the window asked for a restore to
// checkpoint; RestoreFailed that it could not send it.
func (s *Store) MarkRestoring(convID, checkpoint string) {
	s.mu.Lock()
	if c, ok := s.convs[convID]; ok {
		s.trackLocked(c, func() { c.MarkRestoring(checkpoint) })
	}
	s.mu.Unlock()
	s.changed()
}

// RestoreFailed: see MarkRestoring.
func (s *Store) RestoreFailed(convID string) {
	s.mu.Lock()
	if c, ok := s.convs[convID]; ok {
		s.trackLocked(c, c.RestoreFailed)
	}
	s.mu.Unlock()
	s.changed()
}

// trackLocked runs f, a change of c made outside Apply, and marks the
// rows it changed (their versions moved). s.mu is held.
func (s *Store) trackLocked(c *entry, f func()) {
	versions := make([]uint32, len(c.Rows))
	for i, r := range c.Rows {
		versions[i] = r.Version
	}
	f()
	for i, r := range c.Rows {
		if i >= len(versions) || r.Version != versions[i] {
			c.changed[i] = struct{}{}
		}
	}
}

// RestoreEffects is what a restore to checkpoint would change
// (conversation.State.RestoreEffects), and the titles of the other
// conversations the window knows that work in the same folder without a
// worktree of their own: a restore undoes their changes too.
func (s *Store) RestoreEffects(convID, checkpoint string) (files []conversation.RestoreItem, others []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[convID]
	if !ok {
		return nil, nil
	}
	files = c.RestoreEffects(checkpoint)
	if ws := c.Workspace; ws != nil && ws.Isolation != protocol.IsolationWorktree {
		for _, o := range s.convs {
			if o != c && o.Workspace != nil && o.Workspace.Dir == ws.Dir && o.Workspace.Isolation != protocol.IsolationWorktree {
				others = append(others, o.Title)
			}
		}
		slices.Sort(others)
	}
	return files, others
}

// UndoDiscards is what the undo of conversation convID's restore (undo:
// its undo checkpoint) also undoes (conversation.State.UndoDiscards).
func (s *Store) UndoDiscards(convID, undo string) []conversation.RestoreItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[convID]
	if !ok {
		return nil
	}
	return c.UndoDiscards(undo)
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
	c := s.convLocked(convID)
	c.changed[c.AddNote(tone, text)] = struct{}{}
	s.mu.Unlock()
	s.changed()
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
	Agent     string // the agent the relay runs it with ("" unknown)
	// Folder names where it works, in short (conversation.State.Folder;
	// "" for the relay's default folder before its first prompt), and
	// Chosen is the folder it was started in, which groups the list
	// (conversation.State.ChosenFolder).
	Folder string
	Chosen string
}

// View is what the window shows of the current conversation.
type View struct {
	ID     string
	Exists bool
	Title  string
	Agent  string // the agent the relay runs it with ("" unknown)
	// Folder says where it works (conversation.State.Folder), and Dir
	// is that folder's whole path on the relay's machine.
	Folder    string
	Dir       string
	Mode      protocol.Mode
	Streaming bool
	Thinking  bool
	Synced    bool
	OnRelay   bool
	Pending   *conversation.Pending // a copy
	Usage     conversation.Usage    // the conversation's
	Turn      conversation.Usage    // the running or last turn's
	NumRows   int
	// Full is true when Rows holds every row from From on (the first
	// take, a switch, or a rebuild; From is 0 unless Options.FullRows
	// bounds it); otherwise Rows holds only the changed ones.
	Full    bool
	From    int
	Rows    []conversation.Row
	Changed []int // indexes of Rows when !Full
}

// Frame is everything the UI takes in one go.
type Frame struct {
	Conn           client.StateChange
	Notice         string
	ConnChanged    bool
	SidebarChanged bool
	Sidebar        []Entry // when SidebarChanged
	// More is the cursor of the list's next page on the relay, "" when the
	// window has every conversation.
	More string
	// Budget is the relay's credit budget (a copy), nil without one.
	Budget *protocol.Budget
	// Role is the role of the window's token on the relay.
	Role string
	Conv View
}

// Take returns what changed since the last Take for the conversation
// current (all of it when full is true) and clears the change marks.
func (s *Store) Take(current string, full bool) Frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := Frame{Conn: s.conn, Notice: s.notice, ConnChanged: s.connChanged, SidebarChanged: s.sidebarChanged || full, More: s.moreCursor, Role: s.role}
	s.connChanged = false
	if s.budget != nil {
		b := *s.budget
		f.Budget = &b
	}
	if f.SidebarChanged {
		f.Sidebar = s.sidebarLocked()
		s.sidebarChanged = false
	}
	c, ok := s.convs[current]
	if !ok {
		f.Conv = View{ID: current, Full: true}
		return f
	}
	v := View{
		ID: c.ID, Exists: true, Title: c.Title, Synced: c.Synced, OnRelay: c.OnRelay, NumRows: len(c.Rows),
	}
	var pending *conversation.Pending
	v.Mode, v.Streaming, v.Thinking, pending, v.Agent = c.shown()
	// Copies only: the UI reads them while the client's goroutine goes on
	// folding events in.
	if !c.replaying {
		v.Usage, v.Turn = c.Usage.Clone(), c.Turn.Clone()
	}
	v.Folder, v.Dir = c.Folder()
	if pending != nil {
		p := *pending
		p.Request.Choices = slices.Clone(p.Request.Choices)
		v.Pending = &p
	}
	switch {
	case c.replaying && !full && !c.rebuilt:
		// Drawn once the replay is over, whole (the window takes it
		// full then): no changes to copy before.
	case full || c.rebuilt:
		v.Full = true
		if n := s.opts.FullRows; n > 0 && len(c.Rows) > n {
			v.From = len(c.Rows) - n
		}
		v.Rows = slices.Clone(c.Rows[v.From:])
	case len(c.changed) > 0:
		v.Changed = make([]int, 0, len(c.changed))
		for i := range c.changed {
			v.Changed = append(v.Changed, i)
		}
		sort.Ints(v.Changed)
		v.Rows = make([]conversation.Row, len(v.Changed))
		for k, i := range v.Changed {
			v.Rows[k] = c.Rows[i]
		}
	}
	if len(c.changed) > 1024 {
		// A replay marked every row: a cleared map would keep its room
		// for them all.
		c.changed = map[int]struct{}{}
	} else {
		clear(c.changed)
	}
	c.rebuilt = false
	f.Conv = v
	return f
}

// sidebarLocked lists conversations, most recently active first. s.mu is
// held.
func (s *Store) sidebarLocked() []Entry {
	out := make([]Entry, 0, len(s.convs))
	for _, c := range s.convs {
		e := Entry{ID: c.ID, Title: c.Title, UpdatedAt: c.UpdatedAt}
		var pending *conversation.Pending
		e.Mode, e.Streaming, _, pending, e.Agent = c.shown()
		e.Folder, _ = c.Folder()
		e.Chosen = c.ChosenFolder()
		if pending != nil {
			e.Waiting, e.Deadline = true, pending.Deadline
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
func (s *Store) Transcript(id string) []conversation.Row {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.convs[id]; ok {
		return slices.Clone(c.Rows)
	}
	return nil
}

// Rows returns a copy of the conversation's rows from index from up to
// (not including) to, clipped to the rows it has.
func (s *Store) Rows(id string, from, to int) []conversation.Row {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[id]
	if !ok {
		return nil
	}
	from, to = max(from, 0), min(to, len(c.Rows))
	if from >= to {
		return nil
	}
	return slices.Clone(c.Rows[from:to])
}

// MessageText returns the whole markdown of an assistant message so far.
func (s *Store) MessageText(convID, messageID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.convs[convID]; ok {
		return c.MessageText(messageID)
	}
	return ""
}

// State returns the connection state.
func (s *Store) State() client.StateChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}
