package ui

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// The rows of what an agent reports besides its reply (agents of the ACP
// backend do): its reasoning and its plan.

// maxReasoningRunes bounds the reasoning an expanded row shows: a label of
// a book's length costs seconds to lay out. The end is what is kept, as
// the newest thoughts are the ones that matter.
const maxReasoningRunes = 20000

// reasoningView is the agent's reasoning, collapsed under "Thinking" (one
// line: a button to expand and the start of the text), expanded the whole
// text in italics. Expansion is the transcript's (openOf, setOpen), as a
// tool row's, so that it survives the row being scrolled out and back.
type reasoningView struct {
	t       *transcript
	id      int
	open    bool
	obj     *fyne.Container
	toggle  *rowButton
	preview *tintedText
	text    *widget.Label
}

func newReasoningView(t *transcript) *reasoningView {
	v := &reasoningView{t: t}
	v.toggle = t.newButton("Thinking", theme.MenuExpandIcon(), func() {
		if v.open {
			v.t.setOpen(v.id, toolClosed, v.toggle)
		} else {
			v.t.setOpen(v.id, toolOpened, v.toggle)
		}
	})
	v.toggle.Importance = widget.LowImportance
	v.toggle.Alignment = widget.ButtonAlignLeading
	v.preview = newTintedText(theme.SizeNameCaptionText, fyne.TextStyle{Italic: true})
	v.preview.Truncation = fyne.TextTruncateEllipsis
	v.text = widget.NewLabel("")
	v.text.Wrapping = fyne.TextWrapWord
	v.text.Selectable = true
	v.text.TextStyle = fyne.TextStyle{Italic: true}
	head := container.NewBorder(nil, nil, v.toggle, nil, v.preview)
	v.obj = container.NewVBox(head, v.text)
	return v
}

func (v *reasoningView) set(id int, r conversation.Row, open toolOpen) {
	v.id, v.open = id, open != toolClosed
	label := "Thought"
	if !r.Done {
		label = "Thinking…"
	}
	if v.open {
		v.toggle.SetIcon(theme.MenuDropDownIcon())
		v.preview.Hide()
		v.text.SetText(reasoningShown(r.Text))
		v.text.Show()
	} else {
		v.toggle.SetIcon(theme.MenuExpandIcon())
		v.preview.set(conversation.OneLine(head(r.Text, 4096), 200), colorNameHint)
		v.preview.Show()
		v.text.Hide()
	}
	v.toggle.SetText(label)
}

// head is the start of s, at most n bytes cut on a rune's boundary: the
// preview of a long run of reasoning must not cost its whole length at
// each chunk.
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// reasoningShown is the text an expanded reasoning row shows.
func reasoningShown(text string) string {
	n := utf8.RuneCountInString(text)
	if n <= maxReasoningRunes {
		return text
	}
	r := []rune(text)
	return fmt.Sprintf("[… %d earlier characters not shown]\n", n-maxReasoningRunes) + string(r[len(r)-maxReasoningRunes:])
}

// agentPlanView is the agent's plan: a card with how far it is and a line
// per step, marked done, in progress or pending, updated in place as the
// agent reports progress.
type agentPlanView struct {
	obj     *fyne.Container
	bg      cardBackground
	title   *widget.Label
	entries *fyne.Container
	shown   []protocol.PlanEntry // what entries holds, to rebuild only on change
}

func newAgentPlanView() *agentPlanView {
	v := &agentPlanView{}
	v.bg = newCardBackground(codeCard)
	v.title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	// Steps close together: a wrapped label's own padding spaces them.
	v.entries = container.New(layout.NewCustomPaddedVBoxLayout(0))
	v.obj = container.NewStack(v.bg.rect, container.NewPadded(container.NewVBox(v.title, v.entries)))
	return v
}

func (v *agentPlanView) set(r conversation.Row) {
	v.bg.repaint()
	v.title.SetText(conversation.AgentPlanTitle + " · " + r.Text)
	if planEqual(v.shown, r.Entries()) && len(v.entries.Objects) == len(r.Entries()) {
		return
	}
	v.shown = r.Entries()
	v.entries.RemoveAll()
	for _, e := range r.Entries() {
		v.entries.Add(planLine(e))
	}
	relayout(v.obj)
}

// planLine is one step of the agent's plan: its mark and its text, green
// when done and bold in progress, then its priority when high, in amber
// as the page's badge says it (conversation.PriorityText). The mark is a
// segment of its own: Fyne draws a text at the ascent of its first run's
// font, which for a mark of a fallback font (✓) set the step 2 px higher
// than a segment after it.
func planLine(e protocol.PlanEntry) *widget.RichText {
	style := widget.RichTextStyleInline
	switch e.Status {
	case protocol.PlanCompleted:
		style.ColorName = theme.ColorNameSuccess
	case protocol.PlanInProgress:
		style.TextStyle = fyne.TextStyle{Bold: true}
	}
	segs := []widget.RichTextSegment{
		&widget.TextSegment{Text: conversation.PlanMark(e.Status) + "  ", Style: style},
		&widget.TextSegment{Text: strings.TrimSpace(e.Content), Style: style},
	}
	// The spaces before the priority end the step's segment: a segment's
	// leading spaces are laid out as one.
	if p := conversation.PriorityText(e.Priority); p != "" {
		segs[1].(*widget.TextSegment).Text += "  "
		segs = append(segs, &widget.TextSegment{Text: p, Style: widget.RichTextStyle{Inline: true, ColorName: theme.ColorNameWarning}})
	}
	l := widget.NewRichText(segs...)
	l.Wrapping = fyne.TextWrapWord
	return l
}

func planEqual(a, b []protocol.PlanEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
