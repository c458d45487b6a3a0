package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// Modal kinds: the three typed input requests and the plain ask_user
// request (docs/protocol.md, Input requests).
const (
	kindApproval = protocol.InputApproval
	kindChoice   = protocol.InputChoice
	kindText     = protocol.InputText
	kindAsk      = "ask"
)

// inputModal is the non-dismissible modal for an input request: no close
// button, Escape and clicks outside do nothing, and nothing is picked by
// default. It closes when the user answers, or when the relay says the
// request is over (answered elsewhere, timed out, aborted).
type inputModal struct {
	win    *Window
	convID string
	req    protocol.UserInputRequest
	kind   string

	popup     *questionLayer
	sink      *keySink
	hint      *widget.Label
	countdown *widget.Label
	deadline  time.Time     // the relay's, on this clock (Pending.Deadline)
	queued    *widget.Label // how many questions wait behind this one

	choices   []*widget.Button
	highlight int    // -1: none
	typed     string // digits typed for lists of ten or more
	entry     *widget.Entry
}

func modalKind(req protocol.UserInputRequest) string {
	switch req.InputType {
	case protocol.InputApproval, protocol.InputChoice, protocol.InputText:
		return req.InputType
	}
	return kindAsk
}

func newInputModal(w *Window, convID string, p conversation.Pending) *inputModal {
	m := &inputModal{win: w, convID: convID, req: p.Request, kind: modalKind(p.Request), highlight: -1, deadline: p.Deadline}
	m.sink = newKeySink(m.typedRune, m.typedKey)
	m.hint = widget.NewLabel("")
	m.hint.Importance = widget.WarningImportance
	m.hint.Wrapping = fyne.TextWrapWord
	m.hint.Hide()
	m.countdown = widget.NewLabel("")
	m.countdown.SizeName = theme.SizeNameCaptionText
	m.countdown.TextStyle = fyne.TextStyle{Bold: true}
	m.queued = widget.NewLabel("")
	m.queued.SizeName = theme.SizeNameCaptionText
	m.queued.Hide()

	title := widget.NewLabelWithStyle(conversation.QuestionTitle(m.kind), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	question := widget.NewLabel(p.Request.Question)
	question.Wrapping = fyne.TextWrapWord
	question.Selectable = true

	body := container.NewVBox()
	switch m.kind {
	case kindApproval:
		m.buildApproval(body)
	case kindChoice:
		m.buildChoices(body, true)
		if p.Request.AllowFreeform {
			m.buildFreeform(body)
		}
	case kindText:
		m.buildText(body)
	default:
		if len(p.Request.Choices) > 0 {
			m.buildChoices(body, true)
		}
		if p.Request.AllowFreeform || len(p.Request.Choices) == 0 {
			m.buildFreeform(body)
		}
		if len(p.Request.Choices) == 0 {
			m.addRejectRow(body)
		}
	}

	icon := widget.NewIcon(theme.QuestionIcon())
	head := container.NewBorder(nil, nil, icon, nil, title)
	content := container.NewVBox(head, question, widget.NewSeparator(), body, m.hint, m.countdown, m.queued, m.sink)
	m.popup = newQuestionLayer(w, container.NewPadded(content))
	m.update(p, w.now())
	m.refused(p.Hint)
	return m
}

// refused shows the hint of a question reopened after its answer (why the
// answer did not count, Pending.Hint; none, nothing to show), once.
func (m *inputModal) refused(hint string) {
	if hint != "" && m.hint.Text != hint {
		m.setHint(hint)
	}
}

func (m *inputModal) buildApproval(body *fyne.Container) {
	approve, reject := "Approve", "Reject"
	if len(m.req.Choices) >= 2 {
		approve, reject = conversation.Visible(m.req.Choices[0]), conversation.Visible(m.req.Choices[1])
	}
	a := widget.NewButtonWithIcon("a) "+approve, theme.ConfirmIcon(), m.approve)
	a.Importance = widget.HighImportance
	r := widget.NewButtonWithIcon("r) "+reject, theme.CancelIcon(), m.reject)
	r.Importance = widget.DangerImportance
	body.Add(container.NewGridWithColumns(2, a, r))
	body.Add(caption(conversation.ApprovalKeys))
}

func (m *inputModal) buildChoices(body *fyne.Container, withReject bool) {
	for i, c := range m.req.Choices {
		i := i
		b := widget.NewButton(fmt.Sprintf("%d) %s", i+1, conversation.Visible(c)), func() { m.pick(i) })
		b.Alignment = widget.ButtonAlignLeading
		b.Importance = widget.MediumImportance
		m.choices = append(m.choices, b)
		body.Add(b)
	}
	if withReject {
		body.Add(widget.NewSeparator())
		m.addRejectRow(body)
	}
	body.Add(caption(conversation.ChoiceKeys(len(m.req.Choices))))
}

func (m *inputModal) addRejectRow(body *fyne.Container) {
	r := widget.NewButtonWithIcon("r) Reject", theme.CancelIcon(), m.reject)
	r.Importance = widget.DangerImportance
	r.Alignment = widget.ButtonAlignLeading
	body.Add(r)
}

func (m *inputModal) buildFreeform(body *fyne.Container) {
	m.entry = widget.NewEntry()
	m.entry.SetPlaceHolder("Type your own answer…")
	m.entry.OnSubmitted = func(string) { m.submitText() }
	send := widget.NewButtonWithIcon("Send", theme.MailSendIcon(), m.submitText)
	body.Add(container.NewBorder(nil, nil, nil, send, m.entry))
}

func (m *inputModal) buildText(body *fyne.Container) {
	m.entry = widget.NewEntry()
	m.entry.SetPlaceHolder("Your answer")
	m.entry.OnSubmitted = func(string) { m.submitText() }
	glyph := canvas.NewText("?", theme.Color(theme.ColorNamePrimary))
	glyph.TextStyle = fyne.TextStyle{Bold: true}
	glyph.TextSize = theme.TextSubHeadingSize()
	send := widget.NewButtonWithIcon("Send", theme.MailSendIcon(), m.submitText)
	body.Add(container.NewBorder(nil, nil, container.NewCenter(glyph), send, m.entry))
	// The same Reject the other kinds have: typing r is a keyboard path,
	// a button is what a pointer looks for.
	r := widget.NewButtonWithIcon("Reject", theme.CancelIcon(), m.reject)
	r.Importance = widget.DangerImportance
	r.Alignment = widget.ButtonAlignLeading
	body.Add(r)
	body.Add(caption(conversation.TextKeys))
}

func caption(text string) *widget.Label {
	l := widget.NewLabel(text)
	l.SizeName = theme.SizeNameCaptionText
	l.Wrapping = fyne.TextWrapWord
	return l
}

// show puts the modal on screen and gives it the keyboard.
func (m *inputModal) show() {
	c := m.win.win.Canvas()
	// The window's content keeps its own focus under an overlay: take it
	// from the composer first, or both it and the answer field show a
	// focus border. Hiding the modal gives it back (Window.showModal).
	c.Unfocus()
	m.popup.Show()
	if m.kind == kindText && m.entry != nil {
		c.Focus(m.entry)
	} else {
		c.Focus(m.sink)
	}
}

func (m *inputModal) hide() { m.popup.Hide() }

func (m *inputModal) setHint(text string) {
	m.hint.SetText(text)
	m.hint.Show()
	m.resize()
}

func (m *inputModal) resize() { m.popup.fit() }

// update follows the open question: its deadline moves when the relay's
// clock is learnt (copilot:subscribed after a replay), and the count of
// questions behind it changes.
func (m *inputModal) update(p conversation.Pending, now time.Time) {
	m.deadline = p.Deadline
	if text := conversation.QueuedText(p.Request.Queued); text != m.queued.Text {
		m.queued.SetText(text)
		if text == "" {
			m.queued.Hide()
		} else {
			m.queued.Show()
		}
		m.resize()
	}
	m.tick(now)
}

// tick updates the countdown to the relay's deadline; the window keeps no
// timeout of its own.
func (m *inputModal) tick(now time.Time) {
	m.countdown.SetText(conversation.CountdownText(m.deadline, now))
}

// ---- answers ----

func (m *inputModal) approve() {
	m.win.answer(m.convID, m.req.RequestID, protocol.AnswerApprove, false, nil)
}

func (m *inputModal) reject() {
	m.win.reject(m.convID, m.req.RequestID)
}

func (m *inputModal) pick(i int) {
	if i < 0 || i >= len(m.req.Choices) {
		return
	}
	idx := i
	m.win.answer(m.convID, m.req.RequestID, m.req.Choices[i], false, &idx)
}

func (m *inputModal) submitText() {
	text := strings.TrimSpace(m.entry.Text)
	if m.kind == kindText && client.IsRejection(text) {
		m.reject()
		return
	}
	if text == "" {
		if m.kind == kindText {
			m.setHint(conversation.AnswerRequired)
		} else {
			m.setHint(conversation.AnswerOrPick)
		}
		return
	}
	m.win.answer(m.convID, m.req.RequestID, text, true, nil)
}

// ---- keys ----

func (m *inputModal) typedRune(r rune) {
	switch m.kind {
	case kindApproval:
		switch r {
		case 'a', 'A', '1':
			m.approve()
		case 'r', 'R', '2':
			m.reject()
		default:
			m.setHint(conversation.ApprovalHint)
		}
	case kindChoice, kindAsk:
		m.choiceRune(r)
	case kindText:
		// The entry has the focus; a rune here means it lost it.
		if m.entry != nil {
			m.win.win.Canvas().Focus(m.entry)
			m.entry.TypedRune(r)
		}
	}
}

func (m *inputModal) choiceRune(r rune) {
	n := len(m.choices)
	switch {
	case r == 'r' || r == 'R':
		m.reject()
	case r >= '0' && r <= '9' && n > 0:
		if n <= 9 {
			i := int(r - '1')
			if i < 0 || i >= n {
				m.setHint(m.rangeHint())
				return
			}
			m.pick(i)
			return
		}
		m.typed += string(r)
		if v, err := strconv.Atoi(m.typed); err == nil && v >= 1 && v <= n {
			m.setHighlight(v - 1)
			m.setHint(conversation.TypedChoiceHint(m.typed))
		} else {
			m.typed = ""
			m.setHint(m.rangeHint())
		}
	default:
		m.setHint(m.rangeHint())
	}
}

func (m *inputModal) rangeHint() string {
	return conversation.ChoiceHint(len(m.choices))
}

func (m *inputModal) typedKey(k *fyne.KeyEvent) {
	// The transcript behind the question scrolls: its context.
	switch k.Name {
	case fyne.KeyPageUp:
		m.win.transcript.page(-1)
		return
	case fyne.KeyPageDown:
		m.win.transcript.page(1)
		return
	}
	switch m.kind {
	case kindApproval:
		m.setHint(conversation.ApprovalHint)
	case kindChoice, kindAsk:
		n := len(m.choices)
		switch k.Name {
		case fyne.KeyDown:
			if n > 0 {
				m.setHighlight((m.highlight + 1) % n)
			}
		case fyne.KeyUp:
			if n > 0 {
				if m.highlight < 0 {
					m.setHighlight(n - 1)
				} else {
					m.setHighlight((m.highlight - 1 + n) % n)
				}
			}
		case fyne.KeyReturn, fyne.KeyEnter:
			if m.highlight >= 0 {
				m.pick(m.highlight)
			} else {
				m.setHint(conversation.NothingSelectedHint(len(m.choices)))
			}
		case fyne.KeyBackspace:
			m.typed = ""
		default:
			m.setHint(m.rangeHint())
		}
	case kindText:
		if k.Name == fyne.KeyReturn || k.Name == fyne.KeyEnter {
			m.submitText()
			return
		}
		m.setHint("Type your answer and press Enter, or type r to reject.")
	}
}

// setHighlight marks choice i as the one Enter picks.
func (m *inputModal) setHighlight(i int) {
	m.highlight = i
	for j, b := range m.choices {
		if j == i {
			b.Importance = widget.HighImportance
		} else {
			b.Importance = widget.MediumImportance
		}
		b.Refresh()
	}
}

// keySink is an invisible focusable widget that receives the modal's keys.
type keySink struct {
	widget.BaseWidget
	onRune func(rune)
	onKey  func(*fyne.KeyEvent)
}

func newKeySink(onRune func(rune), onKey func(*fyne.KeyEvent)) *keySink {
	s := &keySink{onRune: onRune, onKey: onKey}
	s.ExtendBaseWidget(s)
	return s
}

func (s *keySink) CreateRenderer() fyne.WidgetRenderer {
	r := canvas.NewRectangle(nil)
	return widget.NewSimpleRenderer(r)
}

func (s *keySink) MinSize() fyne.Size          { return fyne.NewSize(0, 0) }
func (s *keySink) FocusGained()                {}
func (s *keySink) FocusLost()                  {}
func (s *keySink) TypedRune(r rune)            { s.onRune(r) }
func (s *keySink) TypedKey(k *fyne.KeyEvent)   { s.onKey(k) }
func (s *keySink) TypedShortcut(fyne.Shortcut) {}
