package ui

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
)

// toolOpen is how far a tool row is expanded.
type toolOpen int

const (
	toolClosed  toolOpen = iota // one line
	toolOpened                  // what it did, long output cut to its ends
	toolShowAll                 // all of its output
)

// outputEnds is how many lines of a long output show at each end.
const outputEnds = 6

// maxShownLines bounds "show all": a tool that printed a million lines
// must not build a million-line label.
const maxShownLines = 2000

// openOf is how far row r is expanded (tool rows, and reasoning rows:
// open or not).
func (t *transcript) openOf(r conversation.Row) toolOpen {
	if r.Kind != conversation.RowTool && r.Kind != conversation.RowReasoning {
		return toolClosed
	}
	return t.open[r.MessageID]
}

// setOpen expands or collapses tool row id and measures it anew. by is
// the row's button that did it when that button outlives the change (the
// expand button, a Thinking toggle; nil for Show all and Show less, which
// the row makes anew). If the keyboard is on by (Tab reached it, Space
// pressed it) it stays there; otherwise it goes back to the composer, so
// that neither a click nor a button that went away strands it.
func (t *transcript) setOpen(id int, o toolOpen, by fyne.Focusable) {
	if id < 0 || id >= len(t.rows) {
		return
	}
	r := t.rows[id]
	if o == toolClosed {
		delete(t.open, r.MessageID)
	} else {
		t.open[r.MessageID] = o
	}
	t.remeasureRow(id)
	t.focusAfterToggle(by)
}

// remeasureRow gives row id its height again after what it shows changed
// (a part opened or closed). A row whose height stayed is refreshed by
// hand: the list redraws a row only when its height changes.
func (t *transcript) remeasureRow(id int) {
	t.cache[id].exact = false
	h := t.measureRow(id)
	if h == t.heights[id] {
		t.list.RefreshItem(id)
	}
	t.setHeights(map[int]float32{id: h})
}

// focusAfterToggle leaves the keyboard on by when it is there (Tab
// reached the button, Space pressed it) and otherwise sends it back to
// the composer, so that neither a click nor a button that went away
// strands it.
func (t *transcript) focusAfterToggle(by fyne.Focusable) {
	if by == nil || t.win.win.Canvas().Focused() != by {
		t.win.focusComposer()
	}
}

// toolView is a tool call: one line (name, what it was called with, its
// state, a button to expand), and when expanded what it did: for a shell
// the command and its output, for an edit or a new file a coloured diff,
// for a read or a search what was read or found. In Plan the same shows
// what would have run.
type toolView struct {
	t      *transcript
	id     int
	open   toolOpen
	obj    *fyne.Container
	icon   *widget.Icon
	name   *widget.Label
	args   *widget.Label
	state  *tintedText
	detail *widget.Label
	expand *rowButton
	body   *fyne.Container
}

func newToolView(t *transcript) *toolView {
	v := &toolView{t: t}
	v.icon = widget.NewIcon(theme.SettingsIcon())
	v.name = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.args = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	v.args.Truncation = fyne.TextTruncateEllipsis
	v.state = newTintedText(theme.SizeNameText, fyne.TextStyle{})
	v.detail = widget.NewLabel("")
	v.detail.Truncation = fyne.TextTruncateEllipsis
	v.detail.SizeName = theme.SizeNameCaptionText
	v.expand = t.newButton("", theme.MenuExpandIcon(), func() {
		if v.open == toolClosed {
			v.t.setOpen(v.id, toolOpened, v.expand)
		} else {
			v.t.setOpen(v.id, toolClosed, v.expand)
		}
	})
	v.expand.Importance = widget.LowImportance
	v.body = container.NewVBox()
	left := container.NewHBox(v.icon, v.name)
	head := container.NewBorder(nil, v.detail, left, container.NewHBox(v.state, v.expand), v.args)
	v.obj = container.NewVBox(head, v.body)
	return v
}

func (v *toolView) set(id int, r conversation.Row, open toolOpen) {
	v.id, v.open = id, open
	v.name.SetText(r.Title)
	v.args.SetText(r.Text)
	switch r.State {
	case conversation.ToolRunning:
		v.icon.SetResource(theme.MediaPlayIcon())
		v.state.set(conversation.ToolStateText(r.State), theme.ColorNameForeground)
	case conversation.ToolApproved:
		v.icon.SetResource(theme.ConfirmIcon())
		v.state.set(conversation.ToolStateText(r.State), theme.ColorNameSuccess)
	case conversation.ToolDenied:
		v.icon.SetResource(theme.CancelIcon())
		v.state.set(conversation.ToolStateText(r.State), theme.ColorNameWarning)
	case conversation.ToolStopped:
		v.icon.SetResource(theme.MediaStopIcon())
		v.state.set(conversation.ToolStateText(r.State), colorNameHint)
	default:
		v.icon.SetResource(theme.ErrorIcon())
		v.state.set(conversation.ToolStateText(conversation.ToolFailed), theme.ColorNameError)
	}
	if open == toolClosed {
		v.expand.SetIcon(theme.MenuExpandIcon())
		v.body.RemoveAll()
		v.body.Hide()
		if r.Detail != "" && r.State != conversation.ToolApproved {
			v.detail.SetText(r.Detail)
			v.detail.Show()
		} else {
			v.detail.Hide()
		}
		return
	}
	v.expand.SetIcon(theme.MenuDropDownIcon())
	v.detail.Hide()
	v.body.Objects = v.work(r, open)
	v.body.Show()
	// The new parts have no size yet: lay the row out now, so that it is
	// measured and drawn with them in place.
	relayout(v.obj)
}

// work builds the expanded part of row r.
func (v *toolView) work(r conversation.Row, open toolOpen) []fyne.CanvasObject {
	w := conversation.DescribeTool(r.Title, json.RawMessage(r.Args), r.Detail)
	var objs []fyne.CanvasObject
	if r.State == conversation.ToolDenied {
		objs = append(objs, smallNote("Plan mode denied this call: nothing ran. This is what it would have done."))
	}
	switch w.Kind {
	case conversation.ToolShell:
		objs = append(objs, mono("$ "+w.Command))
	case conversation.ToolEdit, conversation.ToolCreate, conversation.ToolRead:
		if w.Path != "" {
			objs = append(objs, mono(w.Path))
		}
	case conversation.ToolSearch:
		objs = append(objs, mono(fmt.Sprintf("%s  in %s", w.Query, cmp.Or(w.Path, "."))))
	default:
		if args := prettyArgs(r.Args); args != "" {
			objs = append(objs, mono(args))
		}
	}
	if len(w.Diff) > 0 {
		objs = append(objs, diffView(w.Diff))
	}
	ran := r.State == conversation.ToolApproved || r.State == conversation.ToolFailed
	if ran && strings.TrimSpace(w.Output) != "" && (len(w.Diff) == 0 || w.Kind == conversation.ToolShell) {
		objs = append(objs, v.output(w.Output, open)...)
	}
	return objs
}

// output shows a tool's output: its first and last lines with a button to
// show all of it, or all of it (up to maxShownLines).
func (v *toolView) output(out string, open toolOpen) []fyne.CanvasObject {
	head, tail, hidden := conversation.HeadTail(out, outputEnds)
	if hidden == 0 || open == toolShowAll {
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		note := ""
		if len(lines) > maxShownLines {
			note = fmt.Sprintf("… the first %d of %d lines; Copy on the reply has the rest in the agent's words", maxShownLines, len(lines))
			lines = lines[:maxShownLines]
		}
		objs := []fyne.CanvasObject{mono(strings.Join(lines, "\n"))}
		if note != "" {
			objs = append(objs, smallNote(note))
		}
		if hidden > 0 {
			less := v.t.newButton("Show less", nil, func() { v.t.setOpen(v.id, toolOpened, nil) })
			less.Importance = widget.LowImportance
			objs = append(objs, container.NewHBox(less))
		}
		return objs
	}
	all := v.t.newButton(conversation.ShowAllLinesText(len(head)+len(tail)+hidden), nil, func() { v.t.setOpen(v.id, toolShowAll, nil) })
	all.Importance = widget.LowImportance
	return []fyne.CanvasObject{
		mono(strings.Join(head, "\n")),
		smallNote(fmt.Sprintf("… %d more lines …", hidden)),
		mono(strings.Join(tail, "\n")),
		container.NewHBox(all),
	}
}

// diffView draws a unified diff: added lines in the theme's green, removed
// ones in red, hunk headers dimmed.
func diffView(diff []conversation.DiffLine) fyne.CanvasObject {
	rt := widget.NewRichText()
	// Long lines end in an ellipsis rather than wrap, so the row's height
	// is its number of lines, known before it is laid out.
	rt.Truncation = fyne.TextTruncateEllipsis
	for i, l := range diff {
		text := string(l.Op) + " " + l.Text
		var c fyne.ThemeColorName
		switch l.Op {
		case '+':
			c = colorSyntaxInserted
		case '-':
			c = colorSyntaxDeleted
		case '@':
			c, text = colorSyntaxComment, l.Text
		case ' ':
			text = "  " + l.Text
		}
		if i < len(diff)-1 {
			text += "\n"
		}
		rt.Segments = append(rt.Segments, codeSegment(text, c))
	}
	rt.Refresh()
	return rt // its colours are the app theme's (appTheme)
}

// mono is monospace text whose long lines end in an ellipsis (see
// diffView).
func mono(text string) fyne.CanvasObject {
	l := widget.NewLabelWithStyle(text, fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	l.Truncation = fyne.TextTruncateEllipsis
	l.Selectable = true
	return l
}

// smallNote is a one-line caption.
func smallNote(text string) fyne.CanvasObject {
	l := widget.NewLabel(text)
	l.SizeName = theme.SizeNameCaptionText
	l.Truncation = fyne.TextTruncateEllipsis
	return l
}

// prettyArgs indents a tool's JSON arguments for reading.
func prettyArgs(raw string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(raw), "", "  ") != nil {
		return raw
	}
	return b.String()
}
