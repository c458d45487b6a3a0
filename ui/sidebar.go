package ui

import (
	"fmt"
	"slices"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/ui/store"
)

// sidebar is the conversation list: a New button above the conversations,
// most recent first, each with its title and a marker when it streams or
// waits for an answer.
type sidebar struct {
	win     *Window
	list    *widget.List
	entries []store.Entry
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
	s := &sidebar{win: w}
	s.list = widget.NewList(
		func() int { return len(s.entries) },
		func() fyne.CanvasObject {
			title := widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
			title.Truncation = fyne.TextTruncateEllipsis
			status := widget.NewLabel("")
			status.SizeName = theme.SizeNameCaptionText
			status.Truncation = fyne.TextTruncateEllipsis
			return newHoverBox(s, container.NewVBox(title, status))
		},
		func(id widget.ListItemID, o fyne.CanvasObject) {
			if id >= len(s.entries) {
				return
			}
			e := s.entries[id]
			if id == len(s.entries)-1 {
				// The end of the list is in view: the relay's next page.
				s.win.loadMore(s.more)
			}
			box := o.(*hoverBox).content
			title := box.Objects[0].(*widget.Label)
			status := box.Objects[1].(*widget.Label)
			title.SetText(e.Title)
			text, imp := entryStatus(e, s.win.now())
			status.Importance = imp
			if e.Folder != "" {
				text = e.Folder + " · " + text
			}
			status.SetText(withAgent(text, e.Agent))
		},
	)
	s.list.OnSelected = func(id widget.ListItemID) {
		if s.quiet || id >= len(s.entries) {
			return
		}
		s.win.switchTo(s.entries[id].ID)
	}
	newBtn := widget.NewButtonWithIcon("New conversation", theme.ContentAddIcon(), w.askNewConversation)
	newBtn.Importance = widget.HighImportance
	shareBtn := widget.NewButtonWithIcon("Connect a device…", theme.ComputerIcon(), w.ShowShare)
	s.root = container.NewBorder(container.NewPadded(newBtn), container.NewPadded(shareBtn), nil, nil, s.list)
	return s
}

// entryStatus is the second line of a conversation entry.
func entryStatus(e store.Entry, now time.Time) (string, widget.Importance) {
	switch {
	case e.Waiting && e.Deadline.IsZero():
		return "waiting for your answer", widget.WarningImportance
	case e.Waiting:
		left := e.Deadline.Sub(now)
		if left < 0 {
			left = 0
		}
		return fmt.Sprintf("waiting for your answer · %s left", clock(left)), widget.WarningImportance
	case e.Streaming:
		return "● streaming…", widget.HighImportance
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
	if current == s.current && slices.EqualFunc(entries, s.entries, sameEntry) {
		return
	}
	s.entries, s.current = entries, current
	s.list.Refresh()
	s.selectCurrent(current)
}

func sameEntry(a, b store.Entry) bool {
	return a.ID == b.ID && a.Title == b.Title && a.Mode == b.Mode && a.Streaming == b.Streaming && a.Agent == b.Agent && a.Folder == b.Folder &&
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
	for i, e := range s.entries {
		if e.ID == current {
			s.list.Select(i)
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
