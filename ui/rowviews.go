package ui

import (
	"math"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// The transcript's row views: one view per kind of row, recycled by the
// virtual list (transcript.go) as rows scroll in and out of view.

// rowState is one list row: a stack holding the view of the row's kind.
type rowState struct {
	t     *transcript
	root  *fyne.Container
	key   rowKey
	width float32
	cur   fyne.CanvasObject

	user *userView
	text *widget.RichText
	// stream is the text of a row that still streams (streamtext.go).
	stream *streamText
	links  linkCopies // text's own copies of the link pieces it shows
	code   *codeView
	tool   *toolView
	plan   *planView
	line   *lineView
	// reasoning and agentPlan: agentrows.go
	reasoning *reasoningView
	agentPlan *agentPlanView
	changes   *changesView // changes.go
}

func (t *transcript) newRowState() *rowState {
	s := &rowState{t: t}
	s.links.reveal = t.reveal
	s.root = container.New(&rowLayout{s: s, stack: layout.NewStackLayout()})
	return s
}

// rowLayout stacks a row view's parts, as container.NewStack does, and
// leads from the view the list holds to its rowState.
type rowLayout struct {
	s     *rowState
	stack fyne.Layout
}

func (l *rowLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	l.stack.Layout(objs, size)
}

func (l *rowLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	return l.stack.MinSize(objs)
}

// rowStateOf returns the rowState of a row view made by createItem.
func rowStateOf(obj fyne.CanvasObject) *rowState {
	if c, ok := obj.(*fyne.Container); ok {
		if l, ok := c.Layout.(*rowLayout); ok {
			return l.s
		}
	}
	return nil
}

func (s *rowState) show(id int, r conversation.Row, segs []widget.RichTextSegment) {
	var obj fyne.CanvasObject
	switch r.Kind {
	case conversation.RowUser:
		if s.user == nil {
			s.user = newUserView()
		}
		s.user.set(r)
		obj = s.user.obj
	case conversation.RowText:
		if !r.Done {
			// Still streaming: a RichText for each block (streamtext.go).
			if s.stream == nil {
				s.stream = newStreamText()
			}
			s.stream.set(s.links.bind(segs))
			obj = s.stream.obj
			break
		}
		if s.text == nil {
			s.text = widget.NewRichText()
			s.text.Wrapping = fyne.TextWrapWord
		}
		s.text.Segments = s.links.bind(segs)
		s.text.Refresh()
		obj = s.text
	case conversation.RowCode:
		if s.code == nil {
			s.code = newCodeView(s.t)
		}
		s.code.set(r)
		obj = s.code.obj
	case conversation.RowTool:
		if s.tool == nil {
			s.tool = newToolView(s.t)
		}
		s.tool.set(id, r, s.t.openOf(r))
		obj = s.tool.obj
	case conversation.RowPlan:
		if s.plan == nil {
			s.plan = newPlanView(s.t)
		}
		s.plan.set(id, s.t.rows)
		obj = s.plan.obj
	case conversation.RowReasoning:
		if s.reasoning == nil {
			s.reasoning = newReasoningView(s.t)
		}
		s.reasoning.set(id, r, s.t.openOf(r))
		obj = s.reasoning.obj
	case conversation.RowAgentPlan:
		if s.agentPlan == nil {
			s.agentPlan = newAgentPlanView()
		}
		s.agentPlan.set(r)
		obj = s.agentPlan.obj
	case conversation.RowNote:
		if r.Changes() == nil {
			obj = s.showLine(id, r)
			break
		}
		if s.changes == nil {
			s.changes = newChangesView(s.t)
		}
		s.changes.set(r)
		obj = s.changes.obj
	default:
		obj = s.showLine(id, r)
	}
	if obj == s.cur {
		return
	}
	if s.cur != nil {
		s.cur.Hide()
	}
	found := false
	for _, o := range s.root.Objects {
		if o == obj {
			found = true
			break
		}
	}
	if !found {
		s.root.Add(obj)
	}
	obj.Show()
	s.cur = obj
}

func (s *rowState) showLine(id int, r conversation.Row) fyne.CanvasObject {
	if s.line == nil {
		s.line = newLineView(s.t)
	}
	s.line.set(id, r)
	return s.line.obj
}

// measureAt returns the height the row needs at width. The row is resized
// only when its width differs: wrapped text already fits its width, and a
// resize of a RichText costs two layout passes over its text.
func (s *rowState) measureAt(width float32) float32 {
	if s.cur == nil {
		return 0
	}
	if s.cur.Size().Width != width {
		h := max(s.cur.Size().Height, 1)
		s.root.Resize(fyne.NewSize(width, h))
		s.cur.Resize(fyne.NewSize(width, h))
	} else if c, ok := s.cur.(*fyne.Container); ok {
		// Same width, but parts may have been shown or hidden (a copy
		// button, a detail line): lay the boxes out again so that wrapped
		// labels get their new widths before they are measured.
		relayout(c)
	}
	return wholePixels(s.cur.MinSize().Height)
}

// wholePixels rounds a row's height up to a whole pixel. The list adds its
// rows' heights up in map order, which differs from one call to the next:
// with fractions, a long history's total then differs in its last bits
// each time, and Fyne lays the list out and repaints the window again, at
// 60 frames a second, for as long as the conversation is shown. Estimates
// are sums of measured heights, so they are whole too.
func wholePixels(h float32) float32 {
	return float32(math.Ceil(float64(h)))
}

// relayout runs the layouts of c and of the containers inside it, without
// refreshing any widget.
func relayout(c *fyne.Container) {
	if c.Layout != nil {
		c.Layout.Layout(c.Objects, c.Size())
	}
	for _, o := range c.Objects {
		if cc, ok := o.(*fyne.Container); ok && cc.Visible() {
			relayout(cc)
		}
	}
}

// userView is the user's prompt in a tinted box.
type userView struct {
	obj  fyne.CanvasObject
	bg   cardBackground
	mode *widget.Label
	text *widget.Label
}

func newUserView() *userView {
	v := &userView{}
	v.bg = newCardBackground(userCard)
	who := widget.NewLabelWithStyle("You", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	who.SizeName = theme.SizeNameCaptionText
	v.mode = widget.NewLabel("")
	v.mode.Importance = widget.WarningImportance
	v.mode.SizeName = theme.SizeNameCaptionText
	v.text = widget.NewLabel("")
	v.text.Wrapping = fyne.TextWrapWord
	v.text.Selectable = true
	head := container.NewHBox(who, v.mode)
	v.obj = container.NewStack(v.bg.rect, container.NewBorder(head, nil, nil, nil, v.text))
	return v
}

func (v *userView) set(r conversation.Row) {
	v.bg.repaint()
	if r.Mode == protocol.ModePlan {
		v.mode.SetText("plan mode")
		v.mode.Show()
	} else {
		v.mode.Hide()
	}
	v.text.SetText(r.Text)
}

// codeView is a fenced code block: monospace, selectable, with a copy button.
type codeView struct {
	obj    fyne.CanvasObject
	bg     cardBackground
	lang   *widget.Label
	code   *widget.RichText // highlighted by highlight once done
	text   string
	hlLang string // what code shows, to highlight only on change
	hlDone bool   // code is highlighted (the row was done)
}

func newCodeView(t *transcript) *codeView {
	v := &codeView{}
	v.bg = newCardBackground(codeCard)
	v.lang = widget.NewLabel("")
	// Caption size, regular: the caption alone sets it apart from the
	// code. It was italic, and a conversation with code but no emphasis
	// then had Fyne parse the italic faces (the theme's and the system
	// fallback it adds, 3.6 MB of Go heap, kept for good) for this label
	// alone.
	v.lang.SizeName = theme.SizeNameCaptionText
	var copyBtn *rowButton
	copyBtn = t.newButton("Copy", theme.ContentCopyIcon(), func() {
		t.win.copyText(v.text)
		t.win.sayCopied(&copyBtn.Button)
	})
	copyBtn.Importance = widget.LowImportance
	v.code = widget.NewRichText()
	v.code.Wrapping = fyne.TextWrapBreak
	head := container.NewBorder(nil, nil, v.lang, copyBtn)
	body := container.NewPadded(v.code) // its colours are the app theme's (appTheme)
	v.obj = container.NewStack(v.bg.rect, container.NewBorder(head, nil, nil, nil, body))
	return v
}

func (v *codeView) set(r conversation.Row) {
	v.bg.repaint()
	lang := r.Lang
	if lang == "" {
		lang = "code"
	}
	v.lang.SetText(lang)
	if r.Text != v.text || r.Lang != v.hlLang || r.Done != v.hlDone || v.code.Segments == nil {
		if r.Done {
			v.code.Segments = highlight(r.Text, r.Lang)
		} else {
			// While the block streams it is drawn in one colour, one
			// segment: a highlighted line is several, and Fyne 2.7.1
			// refreshes the last text of a line of several segments
			// whenever it lays the text out, which the paint does after
			// each update of the block, so each update cost a second,
			// identical frame (see endLine in markdown.go). Nor is the
			// whole block lexed again for every update.
			v.code.Segments = []widget.RichTextSegment{codeSegment(r.Text, "")}
		}
		v.code.Refresh()
	}
	v.text, v.hlLang, v.hlDone = r.Text, r.Lang, r.Done
}

// lineView shows a status line, a mode marker or a note: an icon and a
// wrapped, selectable line, with a "Copy reply" button under a finished turn.
type lineView struct {
	win    *Window
	obj    fyne.CanvasObject
	icon   *widget.Icon
	text   *widget.Label
	detail *widget.Label
	copy   *rowButton
	// undo restores a restore's undo checkpoint (changes.go).
	undo     *rowButton
	restored *protocol.Restored
	idx      int
}

func newLineView(t *transcript) *lineView {
	v := &lineView{win: t.win}
	v.icon = widget.NewIcon(theme.InfoIcon())
	v.text = widget.NewLabel("")
	v.text.Wrapping = fyne.TextWrapWord
	v.text.Selectable = true
	v.detail = widget.NewLabel("")
	v.detail.Wrapping = fyne.TextWrapWord
	v.detail.Selectable = true
	v.detail.SizeName = theme.SizeNameCaptionText
	v.copy = t.newButton("Copy reply", theme.ContentCopyIcon(), func() {
		t.win.copyReplyBefore(v.idx)
		t.win.sayCopied(&v.copy.Button)
	})
	v.copy.Importance = widget.LowImportance
	v.undo = t.newButton("Undo", theme.ContentUndoIcon(), func() {
		if d := v.restored; d != nil {
			t.win.confirmUndo(d.Undo)
		}
	})
	v.undo.Hide()
	v.obj = container.NewBorder(nil, nil, container.New(firstLineLayout{}, v.icon), container.NewVBox(v.copy, v.undo), container.NewVBox(v.text, v.detail))
	return v
}

// setUndo shows Undo on a restore's notice, to a window that may restore:
// "Undoing…" while it is on its way, "Undone" once it was.
func (v *lineView) setUndo(r conversation.Row) {
	v.restored = r.Restored()
	if r.Restored() == nil || v.win.role == protocol.RoleViewer {
		v.undo.Hide()
		return
	}
	v.undo.Show()
	switch c := r.Card(); {
	case c != nil && c.Undone:
		v.undo.SetText("Undone")
		v.undo.Disable()
	case c != nil && c.Restoring:
		v.undo.SetText("Undoing…")
		v.undo.Disable()
	default:
		v.undo.SetText("Undo")
		v.undo.Enable()
	}
}

// firstLineLayout places an icon level with the first line of the Label
// beside it. A Label draws its text inside the theme's inner padding and
// an icon fills its box, so an icon at the top of the row sat half a line
// above the text.
type firstLineLayout struct{}

func (firstLineLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	s := objs[0].MinSize()
	return fyne.NewSize(s.Width, max(s.Height, labelLineHeight(objs[0])))
}

func (firstLineLayout) Layout(objs []fyne.CanvasObject, _ fyne.Size) {
	s := objs[0].MinSize()
	objs[0].Resize(s)
	objs[0].Move(fyne.NewPos(0, max(0, (labelLineHeight(objs[0])-s.Height)/2)))
}

// labelLineHeight is the height of a one-line Label in o's theme.
func labelLineHeight(o fyne.CanvasObject) float32 {
	th := theme.CurrentForWidget(o)
	text := fyne.MeasureText("M", th.Size(theme.SizeNameText), fyne.TextStyle{})
	return text.Height + 2*th.Size(theme.SizeNameInnerPadding)
}

func (v *lineView) set(idx int, r conversation.Row) {
	v.idx = idx
	v.text.TextStyle = fyne.TextStyle{}
	v.copy.Hide()
	v.setUndo(r)
	switch r.Kind {
	case conversation.RowStatus:
		switch r.State {
		case protocol.StatusCompleted:
			v.icon.SetResource(theme.ConfirmIcon())
			v.text.Importance = widget.SuccessImportance
		case protocol.StatusRejected:
			v.icon.SetResource(theme.CancelIcon())
			v.text.Importance = widget.WarningImportance
			v.text.TextStyle = fyne.TextStyle{Bold: true}
		case protocol.StatusAborted:
			v.icon.SetResource(theme.MediaStopIcon())
			v.text.Importance = widget.WarningImportance
		default:
			v.icon.SetResource(theme.ErrorIcon())
			v.text.Importance = widget.DangerImportance
		}
		v.copy.Show()
	case conversation.RowMode:
		v.icon.SetResource(theme.ViewRefreshIcon())
		if r.Mode == protocol.ModePlan {
			v.text.Importance = widget.WarningImportance
		} else {
			v.text.Importance = widget.SuccessImportance
		}
		v.text.TextStyle = fyne.TextStyle{Italic: true}
	default:
		switch r.State {
		case conversation.NoteError:
			v.icon.SetResource(theme.ErrorIcon())
			v.text.Importance = widget.DangerImportance
		case conversation.NoteWarn:
			v.icon.SetResource(theme.WarningIcon())
			v.text.Importance = widget.WarningImportance
		default:
			v.icon.SetResource(theme.InfoIcon())
			v.text.Importance = widget.MediumImportance
		}
	}
	v.text.SetText(r.Text)
	detail := r.Detail
	if r.Restored() != nil {
		v.icon.SetResource(theme.HistoryIcon())
		detail = restoredDetail(r.Restored())
	}
	if detail != "" {
		v.detail.SetText(detail)
		v.detail.Show()
	} else {
		v.detail.Hide()
	}
}
