package ui

import (
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/ui/store"
)

// sidebar is the conversation list: a New button above the conversations,
// most recent first, each with its title and a marker when it streams or
// waits for an answer; grouped by folder (View → Group by folder), each
// folder's conversations under its header, the folder of the most
// recently active one first.
type sidebar struct {
	win  *Window
	list *widget.List
	// entries are the conversations in the order shown, and rows the
	// list's rows: grouped by folder (grouped), each folder's header
	// before its conversations, or the entries alone.
	entries []store.Entry
	rows    []sidebarRow
	grouped bool
	// rowHeight and headerHeight are the heights of a conversation's row
	// and of a header's (setRows).
	rowHeight, headerHeight float32
	// current is the conversation selected by the last set.
	current string
	// quiet is true while the list's selection is set from code, so that
	// OnSelected does not switch conversations again.
	quiet bool
	// more is the cursor of the relay's next page of the list, "" at its
	// end.
	more string
	// held keeps the rows' order while the pointer is over the list;
	// latest is the order the store last gave, shown once it lets go;
	// holdGen tells a late release from a newer hold.
	held    bool
	latest  []store.Entry
	holdGen int
	root    fyne.CanvasObject
}

func newSidebar(w *Window) *sidebar {
	s := &sidebar{win: w, grouped: w.app.Preferences().Bool(prefGroupByFolder)}
	s.list = widget.NewList(
		func() int { return len(s.rows) },
		s.newRow,
		func(id widget.ListItemID, o fyne.CanvasObject) {
			if id >= len(s.rows) {
				return
			}
			r := s.rows[id]
			box := o.(*hoverBox).content
			header := box.Objects[0].(*fyne.Container)
			title := box.Objects[1].(*widget.Label)
			status := box.Objects[2].(*widget.Label)
			if isHeader := r.entry < 0; header.Visible() != isHeader {
				// A reused row changes kind: lay it out again.
				header.Hidden, title.Hidden, status.Hidden = !isHeader, isHeader, isHeader
				box.Refresh()
			}
			if r.entry < 0 {
				header.Objects[0].(*widget.Label).SetText(r.header)
				return
			}
			e := s.entries[r.entry]
			if id == len(s.rows)-1 {
				// The end of the list is in view: the relay's next page.
				s.win.pager.more(s.more)
			}
			title.SetText(e.Title)
			text, imp := entryStatus(e, s.win.now())
			status.Importance = imp
			if f := s.shownFolder(e); f != "" {
				text = f + " · " + text
			}
			status.SetText(withAgent(text, e.Agent))
		},
	)
	s.list.OnSelected = func(id widget.ListItemID) {
		if s.quiet || id >= len(s.rows) {
			return
		}
		if s.rows[id].entry < 0 {
			s.selectCurrent(s.current) // a folder's header opens nothing
			return
		}
		s.win.switchTo(s.entries[s.rows[id].entry].ID)
	}
	newBtn := widget.NewButtonWithIcon("New conversation", theme.ContentAddIcon(), w.askNewConversation)
	newBtn.Importance = widget.HighImportance
	shareBtn := widget.NewButtonWithIcon("Connect a device…", theme.ComputerIcon(), w.ShowShare)
	s.root = container.NewBorder(container.NewPadded(newBtn), container.NewPadded(shareBtn), nil, nil, s.list)
	return s
}

// newRow is a row of the list: a folder's header (grouped), or a
// conversation's title and status line.
func (s *sidebar) newRow() fyne.CanvasObject {
	name := widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	name.SizeName = theme.SizeNameCaptionText
	name.Truncation = fyne.TextTruncateEllipsis
	header := container.NewBorder(nil, nil, widget.NewIcon(theme.FolderIcon()), nil, name)
	header.Hide()
	title := widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	title.Truncation = fyne.TextTruncateEllipsis
	status := widget.NewLabel("")
	status.SizeName = theme.SizeNameCaptionText
	status.Truncation = fyne.TextTruncateEllipsis
	return newHoverBox(s, container.NewVBox(header, title, status))
}

// sidebarRow is a row of the list: entries[entry], or, when entry is -1,
// the header of a folder's conversations.
type sidebarRow struct {
	entry  int
	header string
}

// prefGroupByFolder is the preference key of View → Group by folder.
const prefGroupByFolder = "window.groupByFolder"

// setGrouped groups the list by folder, or shows it flat, and remembers
// the choice for the next start.
func (s *sidebar) setGrouped(on bool) {
	if on == s.grouped {
		return
	}
	s.grouped = on
	s.win.app.Preferences().SetBool(prefGroupByFolder, on)
	// The store's order, regrouped: the pointer is on the menu, not over
	// the list, so no order is held.
	s.held = false
	latest := s.latest
	if latest == nil {
		latest = s.entries
	}
	s.entries = nil
	s.set(latest, s.current)
}

// shownFolder is the folder an entry's status line names: under its
// folder's header only what the header does not say (a worktree's
// branch).
func (s *sidebar) shownFolder(e store.Entry) string {
	if !s.grouped || e.Folder == "" {
		return e.Folder
	}
	name := conversation.FolderLabel(e.Chosen, "", false)
	if e.Folder == name {
		return ""
	}
	return strings.TrimPrefix(e.Folder, name+" · ")
}

// groupByFolder orders entries by folder, the folder of the most recently
// active conversation first, each folder's in their order, and makes the
// rows: each folder's header, then its conversations. Flat, the rows are
// the entries.
func groupByFolder(entries []store.Entry, grouped bool) ([]store.Entry, []sidebarRow) {
	if !grouped {
		rows := make([]sidebarRow, len(entries))
		for i := range entries {
			rows[i] = sidebarRow{entry: i}
		}
		return entries, rows
	}
	var order []string
	byFolder := map[string][]store.Entry{}
	for _, e := range entries {
		if _, ok := byFolder[e.Chosen]; !ok {
			order = append(order, e.Chosen)
		}
		byFolder[e.Chosen] = append(byFolder[e.Chosen], e)
	}
	// A header names its folder; two folders of one name are told apart
	// by their paths.
	names := map[string]int{}
	for _, f := range order {
		names[folderHeader(f, false)]++
	}
	out := make([]store.Entry, 0, len(entries))
	rows := make([]sidebarRow, 0, len(entries)+len(order))
	for _, f := range order {
		rows = append(rows, sidebarRow{entry: -1, header: folderHeader(f, names[folderHeader(f, false)] > 1)})
		for _, e := range byFolder[f] {
			rows = append(rows, sidebarRow{entry: len(out)})
			out = append(out, e)
		}
	}
	return out, rows
}

// folderHeader is what the header of folder's conversations says: its
// name, or its whole path (full).
func folderHeader(folder string, full bool) string {
	switch {
	case folder == "":
		return "Default folder"
	case full:
		return folder
	}
	return conversation.FolderLabel(folder, "", false)
}

// entryStatus is the second line of a conversation entry: what it is
// doing in the words of every front end (conversation.EntryStatus), a
// running turn marked ●, else its mode or "idle".
func entryStatus(e store.Entry, now time.Time) (string, widget.Importance) {
	text := conversation.EntryStatus(e.Waiting, e.Deadline, e.Streaming, now)
	switch {
	case e.Waiting:
		return text, widget.WarningImportance
	case e.Streaming:
		return "● " + text, widget.HighImportance
	case e.Mode == protocol.ModePlan:
		return "plan mode", widget.WarningImportance
	}
	return "idle", widget.MediumImportance
}

// set shows entries and selects current. The list is touched only when
// what it shows changed: a page of the relay's list asked for again after
// a reconnect is mostly the same, and a refresh repaints the window.
func (s *sidebar) set(entries []store.Entry, current string) {
	s.latest = entries
	if s.held && len(s.entries) > 0 {
		// The pointer is over the list: keep the rows where they are, so
		// that a conversation that starts streaming does not move the one
		// about to be clicked. The order catches up when the pointer
		// leaves.
		entries = keepOrder(s.entries, entries)
	}
	entries, rows := groupByFolder(entries, s.grouped)
	if current == s.current && slices.EqualFunc(entries, s.entries, sameEntry) && slices.Equal(rows, s.rows) {
		return
	}
	s.entries, s.current = entries, current
	s.setRows(rows)
	s.list.Refresh()
	s.selectCurrent(current)
}

// setRows makes rows the list's, a header's row the height of its one
// line and every other row the template's.
func (s *sidebar) setRows(rows []sidebarRow) {
	if s.rowHeight == 0 {
		row := s.newRow().(*hoverBox)
		s.rowHeight = row.MinSize().Height
		box := row.content
		box.Objects[0].Show()
		box.Objects[1].Hide()
		box.Objects[2].Hide()
		s.headerHeight = row.MinSize().Height
	}
	for id, r := range s.rows {
		if r.entry < 0 && (id >= len(rows) || rows[id].entry >= 0) {
			s.list.SetItemHeight(id, s.rowHeight)
		}
	}
	for id, r := range rows {
		if r.entry < 0 {
			s.list.SetItemHeight(id, s.headerHeight)
		}
	}
	s.rows = rows
}

func sameEntry(a, b store.Entry) bool {
	return a.ID == b.ID && a.Title == b.Title && a.Mode == b.Mode && a.Streaming == b.Streaming && a.Agent == b.Agent && a.Folder == b.Folder && a.Chosen == b.Chosen &&
		a.Waiting == b.Waiting && a.Deadline.Equal(b.Deadline) && a.UpdatedAt.Equal(b.UpdatedAt)
}

// streamingOther reports whether a conversation other than current streams.
func (s *sidebar) streamingOther(current string) bool {
	for _, e := range s.entries {
		if e.Streaming && e.ID != current {
			return true
		}
	}
	return false
}

func (s *sidebar) selectCurrent(current string) {
	s.quiet = true
	defer func() { s.quiet = false }()
	for id, r := range s.rows {
		if r.entry >= 0 && s.entries[r.entry].ID == current {
			s.list.Select(id)
			return
		}
	}
	s.list.UnselectAll()
}

// waiting reports whether any entry shows a countdown.
func (s *sidebar) waiting() bool {
	for _, e := range s.entries {
		if e.Waiting {
			return true
		}
	}
	return false
}

// keepOrder returns latest in the order of shown: entries already shown
// keep their places, new ones follow, gone ones go.
func keepOrder(shown, latest []store.Entry) []store.Entry {
	byID := make(map[string]store.Entry, len(latest))
	for _, e := range latest {
		byID[e.ID] = e
	}
	out := make([]store.Entry, 0, len(latest))
	for _, e := range shown {
		if l, ok := byID[e.ID]; ok {
			out = append(out, l)
			delete(byID, e.ID)
		}
	}
	for _, e := range latest {
		if _, ok := byID[e.ID]; ok {
			out = append(out, e)
		}
	}
	return out
}

// holdOrder keeps the list's order while the pointer is over it. Leaving
// lets it go after a moment: moving from one row to the next is a leave
// and an enter, which must not reorder in between.
func (s *sidebar) holdOrder(on bool) {
	s.holdGen++
	if on {
		s.held = true
		return
	}
	gen := s.holdGen
	s.win.later(releaseDelay, func() {
		if s.holdGen == gen && s.held {
			s.held = false
			if s.latest != nil {
				s.set(s.latest, s.current)
			}
		}
	})
}

// releaseDelay is how long the order holds after the pointer left a row.
const releaseDelay = 300 * time.Millisecond

// hoverBox is a row of the list that tells the sidebar when the pointer is
// over it.
type hoverBox struct {
	widget.BaseWidget
	s       *sidebar
	content *fyne.Container
}

func newHoverBox(s *sidebar, content *fyne.Container) *hoverBox {
	h := &hoverBox{s: s, content: content}
	h.ExtendBaseWidget(h)
	return h
}

func (h *hoverBox) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(h.content)
}

func (h *hoverBox) MouseIn(*desktop.MouseEvent)    { h.s.holdOrder(true) }
func (h *hoverBox) MouseMoved(*desktop.MouseEvent) {}
func (h *hoverBox) MouseOut()                      { h.s.holdOrder(false) }
