package ui

import (
	"image/color"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/ui/store"
)

// noticeCard is an info card above the conversation: an icon, a title, a
// markdown body and a row of buttons. It says something about the app (the
// agent is a demo, the saved settings did not start), not an error of a
// turn, and the user dismisses it.
type noticeCard struct {
	id      string // which notice: firstRunNoticeID, startNoticeID, relayNoticeID
	title   *widget.Label
	body    *widget.RichText
	bg      cardBackground
	root    fyne.CanvasObject
	text    *fyne.Container // the title, the body and the buttons, or the title beside the buttons (shrunk)
	buttons *fyne.Container
	shrunk  bool
	// relabel are the buttons whose words change once it shrinks.
	relabel map[*widget.Button]string
}

// noticeAction is one button of a notice.
type noticeAction struct {
	label     string
	icon      fyne.Resource
	important bool
	do        func()
	// shrunk, if not "", is the button's label once the notice shrank:
	// "Use the demo" reads as an offer, and the demo is in use by then.
	shrunk string
}

func newNoticeCard(id string, icon fyne.Resource, title, markdown string, actions ...noticeAction) *noticeCard {
	n := &noticeCard{id: id}
	n.title = widget.NewLabelWithStyle(title, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	n.title.Wrapping = fyne.TextWrapWord
	// Our renderer, not Fyne's: Fyne's puts a space after each underscore
	// of an identifier ("COPILOT_ GITHUB_ TOKEN" in a start error).
	n.body = widget.NewRichText(parseMarkdown(markdown)...)
	n.body.Wrapping = fyne.TextWrapWord
	n.bg = newCardBackground(noticeColors)

	buttons := container.NewHBox(layout.NewSpacer())
	for _, a := range actions {
		b := widget.NewButtonWithIcon(a.label, a.icon, a.do)
		if a.important {
			b.Importance = widget.HighImportance
		}
		if a.shrunk != "" {
			if n.relabel == nil {
				n.relabel = map[*widget.Button]string{}
			}
			n.relabel[b] = a.shrunk
		}
		buttons.Add(b)
	}
	n.buttons = buttons
	n.text = container.NewVBox(n.title, n.body, buttons)
	iconBox := container.NewVBox(container.NewPadded(widget.NewIcon(icon)))
	n.root = container.NewPadded(container.NewStack(n.bg.rect, container.NewPadded(container.NewBorder(nil, nil, iconBox, nil, n.text))))
	return n
}

// shrink shows the notice as its title beside its buttons, one line high,
// and reports whether it was whole before. The first-run notice shrinks
// once the user sends a prompt to the demo: it was read, the demo is in
// use, and the body would go on taking a fifth of the window from the
// conversation.
func (n *noticeCard) shrink() bool {
	if n.shrunk {
		return false
	}
	n.shrunk = true
	for b, label := range n.relabel {
		b.SetText(label)
	}
	n.text.Objects = []fyne.CanvasObject{container.NewBorder(nil, nil, nil, n.buttons, n.title)}
	n.text.Refresh()
	return true
}

// noticeColors are a calm blue card that reads as information in both the
// light and the dark look.
func noticeColors() (bg, border color.Color) {
	if isDark(theme.Current()) {
		return color.NRGBA{R: 0x16, G: 0x27, B: 0x3f, A: 0xff}, color.NRGBA{R: 0x3b, G: 0x82, B: 0xf6, A: 0xff}
	}
	return color.NRGBA{R: 0xeb, G: 0xf3, B: 0xfe, A: 0xff}, color.NRGBA{R: 0x60, G: 0xa5, B: 0xfa, A: 0xff}
}

// Notice ids.
const (
	firstRunNoticeID = "first-run"
	startNoticeID    = "start"
	relayNoticeID    = "relay" // the window moved to another relay (SetClient)
	// checkpointsNoticeID: what turns change is not recorded (no git, a
	// folder that cannot be snapshotted); shown once a window.
	checkpointsNoticeID = "checkpoints"
)

// prefFirstRunDismissed remembers that the user dismissed the notice about
// running the demo because no Copilot CLI was found.
const prefFirstRunDismissed = "notice.firstRunDismissed"

// FirstRunTitle is the title of the notice shown when the embedded relay
// runs the demo because the Copilot CLI cannot run.
const FirstRunTitle = "You are using the built-in demo agent"

// firstRunText is the notice's body: why, then how to get the real agent.
func firstRunText(reason string) string {
	return reason + " pilotdesk runs a scripted demo instead, so you can try the window: its answers are canned.\n\n" +
		"**To use GitHub Copilot**, install its CLI with `npm install -g @github/copilot` (Node.js 22 or newer), " +
		"then run `copilot` in a terminal and type `/login`. " +
		"Or bring your own model: set a provider URL in Settings. " +
		"Then pick the agent in Settings and apply: no restart of the app needed."
}

// showNotice puts n above the conversation, replacing any other notice.
func (w *Window) showNotice(n *noticeCard) {
	w.notice = n
	w.noticeSlot.Objects = []fyne.CanvasObject{n.root}
	w.noticeSlot.Show()
	w.noticeSlot.Refresh()
}

// dismissNotice removes the notice id if it is shown.
func (w *Window) dismissNotice(id string) {
	if w.notice == nil || w.notice.id != id {
		return
	}
	w.notice = nil
	w.noticeSlot.Objects = nil
	w.noticeSlot.Hide()
	w.noticeSlot.Refresh()
	if w.modal == nil {
		w.focusComposer()
	}
}

// showStartNotices shows what Options asks for at start: the relay's start
// problem first (it needs action), else the first-run notice unless the
// user dismissed it before.
func (w *Window) showStartNotices() {
	switch {
	case w.opts.StartProblem != "":
		w.showNotice(newNoticeCard(startNoticeID, theme.WarningIcon(), "Your saved settings did not start", w.opts.StartProblem,
			noticeAction{label: "Dismiss", do: func() { w.dismissNotice(startNoticeID) }},
			noticeAction{label: "Open Settings", icon: theme.SettingsIcon(), important: true, do: w.ShowSettings},
		))
	case w.opts.DemoReason != "" && !w.app.Preferences().Bool(prefFirstRunDismissed):
		w.showNotice(newNoticeCard(firstRunNoticeID, theme.InfoIcon(), FirstRunTitle, firstRunText(w.opts.DemoReason),
			noticeAction{label: "Use the demo", shrunk: "Dismiss", do: w.dismissFirstRun},
			noticeAction{label: "Open Settings", icon: theme.SettingsIcon(), important: true, do: w.ShowSettings},
		))
	case w.opts.CheckpointsOff != "":
		w.showCheckpointsOff(w.opts.CheckpointsOff)
	}
}

// checkpointsOffTitle is the title of the notice that checkpoints are off.
const checkpointsOffTitle = "What turns change is not recorded"

// showCheckpointsOff says why checkpoints are off (the relay's reason, or
// the copilot:error of a turn whose snapshot failed), once a window: turns
// run as before, with no changes card and nothing to restore. A notice
// that needs the user more (the start problem, the first-run notice while
// whole) is left in place, and this one waits for the next occasion.
func (w *Window) showCheckpointsOff(why string) {
	if w.checkpointsSaid {
		return
	}
	if n := w.notice; n != nil && (n.id == startNoticeID || n.id == firstRunNoticeID && !n.shrunk) {
		return
	}
	w.checkpointsSaid = true
	w.showNotice(newNoticeCard(checkpointsNoticeID, theme.WarningIcon(), checkpointsOffTitle,
		sentence(why)+" Turns run as before, but the window shows no changes card for them and cannot restore their files.",
		noticeAction{label: "Dismiss", do: func() { w.dismissNotice(checkpointsNoticeID) }},
	))
}

// compactFirstRunOnHistory shrinks the first-run notice to its one line
// once the relay lists a conversation: the demo has been used (at the
// previous start, or from another device), and the notice's body would
// take a fifth of the window from every conversation at every start, as
// it did before its first prompt of this run shrank it.
func (w *Window) compactFirstRunOnHistory(entries []store.Entry) {
	n := w.notice
	if n == nil || n.id != firstRunNoticeID || n.shrunk {
		return
	}
	for _, e := range entries {
		if w.store.OnRelay(e.ID) {
			n.shrink()
			relayout(w.chat)
			return
		}
	}
}

// dismissFirstRun hides the first-run notice for good.
func (w *Window) dismissFirstRun() {
	w.app.Preferences().SetBool(prefFirstRunDismissed, true)
	w.dismissNotice(firstRunNoticeID)
}

// showRelayChanged says plainly that the window is on another relay now
// (SetClient): the embedded one restarted, or another one; and what became
// of the turns that were running.
func (w *Window) showRelayChanged(wasRemote bool) {
	title, body := relayChangedText(w.opts, w.client.URL(), wasRemote)
	w.showNotice(newNoticeCard(relayNoticeID, theme.InfoIcon(), title, body,
		noticeAction{label: "Dismiss", do: func() { w.dismissNotice(relayNoticeID) }},
	))
}

// relayChangedText is the notice's title and markdown body for the relay at
// relayURL that opts describe.
func relayChangedText(opts Options, relayURL string, wasRemote bool) (title, body string) {
	switch {
	case opts.Remote:
		title = "Now on the relay at " + relayHost(relayURL)
		body = "pilotdesk connected to this relay; the conversations are the ones it keeps."
		if !wasRemote {
			body += " The embedded relay stopped: turns that were running on it stopped, its conversations are kept for when you come back."
		}
		return title, body
	case wasRemote:
		title = "Now on the embedded relay"
		body = "pilotdesk started its relay on this computer; the conversations are the ones kept here."
	default:
		title = "The embedded relay restarted"
		body = "pilotdesk restarted its relay with the settings: turns that were running stopped, your conversations are kept."
	}
	if opts.DemoReason != "" {
		body += "\n\nIt runs the built-in demo: " + opts.DemoReason
	} else if opts.Agent != "" {
		body += "\n\nAgent: " + aboutInfo{Agent: opts.Agent, Label: opts.AgentLabel}.agentLine() + "."
	}
	return title, body
}

// relayHost is a relay's address without its path, for a title.
func relayHost(relayURL string) string {
	if u, err := url.Parse(relayURL); err == nil && u.Host != "" {
		return u.Host
	}
	return relayURL
}

// sentence makes s, a message that may begin in lower case and end with
// no full stop, a sentence.
func sentence(s string) string {
	s = strings.TrimRight(strings.TrimSpace(s), ".")
	if s == "" {
		return ""
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:] + "."
}
