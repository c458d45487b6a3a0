package ui

import (
	"net/url"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/assets"
)

// Links the About dialog shows.
const (
	ProjectURL    = "https://github.com/pilotdesk/pilotdesk"
	CopilotCLIURL = "https://github.com/features/copilot/cli"
	LicenseURL    = "https://github.com/pilotdesk/pilotdesk/blob/main/LICENSE"
)

// aboutInfo is what the About dialog says about the running app.
type aboutInfo struct {
	Version  string
	RelayURL string // never the token
	Remote   bool
	Agent    string // "" when the relay is remote (its agent is not known)
	Label    string // the agent as people know it, when its backend says
}

// relayLine describes the relay for a person.
func (a aboutInfo) relayLine() string {
	if a.Remote {
		return "remote, " + a.RelayURL
	}
	return "embedded in this app, " + a.RelayURL
}

func (a aboutInfo) agentLine() string {
	if a.Agent != "" && a.Label != "" {
		return a.Label
	}
	switch a.Agent {
	case "":
		return "chosen by the remote relay"
	case "script":
		return "built-in demo (scripted)"
	case "copilot":
		return "GitHub Copilot CLI"
	}
	return a.Agent
}

// aboutContent builds the dialog's body.
func aboutContent(info aboutInfo) fyne.CanvasObject {
	icon := canvas.NewImageFromResource(fyne.NewStaticResource("pilotdesk.png", assets.Icon))
	icon.FillMode = canvas.ImageFillContain
	icon.SetMinSize(fyne.NewSize(96, 96))

	name := widget.NewRichTextFromMarkdown("# pilotdesk")
	version := info.Version
	if version == "" {
		version = "unknown"
	}
	ver := widget.NewLabel("Version " + version)
	blurb := widget.NewLabel("A desktop window for AI coding agents,\nthe GitHub Copilot CLI first.")
	head := container.NewBorder(nil, nil, container.NewCenter(icon), nil,
		container.NewVBox(name, ver, blurb))

	relay := widget.NewLabel(info.relayLine())
	// One line: the dialog grows to fit the address.
	relay.Wrapping = fyne.TextWrapOff
	relay.Selectable = true
	details := widget.NewForm(
		widget.NewFormItem("Relay", relay),
		widget.NewFormItem("Agent", widget.NewLabel(info.agentLine())),
	)

	links := container.NewHBox(
		link("Project site", ProjectURL),
		link("GitHub Copilot CLI", CopilotCLIURL),
		link("License", LicenseURL),
	)
	return container.NewVBox(head, widget.NewSeparator(), details, links)
}

func link(text, raw string) *widget.Hyperlink {
	u, err := url.Parse(raw)
	if err != nil {
		// The links are constants: a bad one is a programming error
		// that the tests catch.
		return widget.NewHyperlink(text, nil)
	}
	return widget.NewHyperlink(text, u)
}

// ShowAbout opens the About dialog.
func (w *Window) ShowAbout() {
	info := aboutInfo{Version: w.opts.Version, RelayURL: w.clientURL(), Remote: w.opts.Remote, Agent: w.opts.Agent, Label: w.opts.AgentLabel}
	d := dialog.NewCustom("About pilotdesk", "Close", aboutContent(info), w.win)
	w.about = d
	d.SetOnClosed(func() { w.about = nil })
	d.Show()
}
