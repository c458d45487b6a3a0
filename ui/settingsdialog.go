package ui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// The Settings dialog edits the saved Settings. Flags given on the command
// line fix their fields for the run (Options.Locked): those show the value
// in use, read-only. The model and the notifications apply at once; the
// connection and the agent's settings restart the embedded relay (or
// reconnect to the remote one) through Options.Restart, which stops the
// turns that run.

// Connection choices.
const (
	connEmbedded = "Embedded relay on this computer"
	connRemote   = "Remote relay"
)

// agentChoices are the agent select's labels, in order, and their values.
var agentChoices = []struct{ label, value string }{
	{"Auto: Copilot when it can run, else the demo", AgentAuto},
	{"GitHub Copilot CLI", AgentCopilot},
	{"Built-in demo (scripted)", AgentDemo},
}

func agentLabel(value string) string {
	for _, c := range agentChoices {
		if c.value == value {
			return c.label
		}
	}
	return agentChoices[0].label
}

func agentValue(label string) string {
	for _, c := range agentChoices {
		if c.label == label {
			return c.value
		}
	}
	return AgentAuto
}

// Texts of the dialog's status line.
const (
	settingsNote        = "Applying a change to the connection or the agent restarts the embedded relay: running turns are stopped, conversations are kept. The model and notifications apply at once."
	settingsNoteNoHost  = "Changes to the connection or the agent apply when pilotdesk starts again. The model and notifications apply at once."
	settingsRestarting  = "Restarting the agent with the new settings…"
	settingsReconnect   = "Connecting to the relay…"
	settingsSavedNoHost = "Saved. The connection and agent settings apply when pilotdesk starts again."
)

type settingsDialog struct {
	w      *Window
	saved  Settings // the preferences when the dialog opened
	locked map[SettingField]string
	dlg    *dialog.CustomDialog

	connection    *widget.RadioGroup
	remoteURL     *widget.Entry
	remoteToken   *widget.Entry
	agent         *widget.Select
	copilotPath   *widget.Entry
	copilotBrowse *widget.Button
	model         *widget.Entry
	providerURL   *widget.Entry
	providerType  *widget.Select
	providerKey   *widget.Entry
	workDir       *widget.Entry
	workBrowse    *widget.Button
	inputTimeout  *widget.SelectEntry
	notifications *widget.Check

	errs     map[SettingField]*widget.Label
	items    map[SettingField]*widget.FormItem
	status   *widget.Label
	activity *widget.Activity
	apply    *widget.Button
	cancel   *widget.Button
	busy     bool
}

// ShowSettings opens the Settings dialog (Ctrl+, and the menu).
func (w *Window) ShowSettings() {
	if w.settings != nil {
		return
	}
	d := newSettingsDialog(w)
	w.settings = d
	d.dlg.Show()
	w.win.Canvas().Focus(d.model)
}

func newSettingsDialog(w *Window) *settingsDialog {
	d := &settingsDialog{
		w:      w,
		saved:  LoadSettings(w.app.Preferences(), DefaultSettings()),
		locked: w.opts.Locked,
		errs:   map[SettingField]*widget.Label{},
		items:  map[SettingField]*widget.FormItem{},
	}
	// What the dialog shows: the saved value, or the one the command line
	// fixed.
	shown := d.saved
	eff := w.opts.Effective
	for f := range d.locked {
		switch f {
		case FieldAgent:
			shown.Agent = eff.Agent
		case FieldCopilotPath:
			shown.CopilotPath = eff.CopilotPath
		case FieldModel:
			shown.Model = eff.Model
		case FieldProviderURL:
			shown.ProviderURL = eff.ProviderURL
		case FieldProviderType:
			shown.ProviderType = eff.ProviderType
		case FieldProviderKey:
			shown.ProviderKey = eff.ProviderKey
		case FieldWorkDir:
			shown.WorkDir = eff.WorkDir
		case FieldInputTimeout:
			shown.InputTimeout = eff.InputTimeout
		case FieldRemote:
			shown.Remote = eff.Remote
		case FieldRemoteURL:
			shown.RemoteURL = eff.RemoteURL
		case FieldRemoteToken:
			shown.RemoteToken = eff.RemoteToken
		}
	}

	d.connection = widget.NewRadioGroup([]string{connEmbedded, connRemote}, func(string) { d.connectionChanged() })
	d.connection.Required = true
	d.remoteURL = widget.NewEntry()
	d.remoteURL.SetPlaceHolder("ws://host:7420/ws")
	d.remoteURL.SetText(shown.RemoteURL)
	d.remoteToken = widget.NewPasswordEntry()
	d.remoteToken.SetPlaceHolder("the relay's token")
	d.remoteToken.SetText(shown.RemoteToken)
	if shown.Remote {
		d.connection.SetSelected(connRemote)
	} else {
		d.connection.SetSelected(connEmbedded)
	}

	labels := make([]string, len(agentChoices))
	for i, c := range agentChoices {
		labels[i] = c.label
	}
	d.agent = widget.NewSelect(labels, nil)
	d.agent.SetSelected(agentLabel(shown.Agent))
	d.copilotPath = widget.NewEntry()
	d.copilotPath.SetPlaceHolder("copilot on PATH")
	d.copilotPath.SetText(shown.CopilotPath)
	d.copilotBrowse = widget.NewButtonWithIcon("Browse…", theme.FileIcon(), d.pickCopilot)
	d.model = widget.NewEntry()
	d.model.SetPlaceHolder("the agent's default")
	d.model.SetText(shown.Model)
	d.providerURL = widget.NewEntry()
	d.providerURL.SetPlaceHolder("optional: http://127.0.0.1:8080/v1")
	d.providerURL.SetText(shown.ProviderURL)
	d.providerType = widget.NewSelect([]string{"openai", "azure", "anthropic"}, nil)
	d.providerType.SetSelected(shown.ProviderType)
	d.providerKey = widget.NewPasswordEntry()
	d.providerKey.SetPlaceHolder("API key for the provider")
	d.providerKey.SetText(shown.ProviderKey)
	d.workDir = widget.NewEntry()
	d.workDir.SetPlaceHolder("where pilotdesk started")
	d.workDir.SetText(shown.WorkDir)
	d.workBrowse = widget.NewButtonWithIcon("Browse…", theme.FolderOpenIcon(), d.pickWorkDir)
	d.inputTimeout = widget.NewSelectEntry([]string{"1m", "5m", "15m", "1h", neverText})
	d.inputTimeout.SetText(FormatInputTimeout(shown.InputTimeout))
	d.notifications = widget.NewCheck("When the agent asks or finishes", nil)
	d.notifications.SetChecked(shown.Notifications)

	agent := widget.NewForm(
		d.item(FieldAgent, "Agent", d.agent, ""),
		d.item(FieldCopilotPath, "Copilot CLI", container.NewBorder(nil, nil, nil, d.copilotBrowse, d.copilotPath), ""),
		d.item(FieldProviderURL, "Provider URL", d.providerURL, "Bring your own model (OpenAI-compatible): no GitHub sign-in"),
		d.item(FieldProviderType, "Provider type", d.providerType, ""),
		d.item(FieldProviderKey, "Provider key", d.providerKey, ""),
		d.item(FieldWorkDir, "Working folder", container.NewBorder(nil, nil, nil, d.workBrowse, d.workDir), "The agent's tools read and write here"),
		d.item(FieldInputTimeout, "Input timeout", d.inputTimeout, "How long a question waits: 90s, 5m, 1h… or never"),
	)
	connection := widget.NewForm(
		d.item(FieldRemote, "Relay", d.connection, ""),
		d.item(FieldRemoteURL, "Address", d.remoteURL, "A relay run by pilotdesk serve, e.g. on a server"),
		d.item(FieldRemoteToken, "Token", d.remoteToken, ""),
	)
	window := widget.NewForm(
		d.item(FieldModel, "Model", d.model, "Sent with each prompt; applies from the next one"),
		d.item(FieldNotifications, "Notify me", d.notifications, "While pilotdesk is in the background"),
	)

	note := settingsNote
	if w.opts.Restart == nil {
		note = settingsNoteNoHost
	}
	d.status = widget.NewLabel(note)
	d.status.Wrapping = fyne.TextWrapWord
	d.status.SizeName = theme.SizeNameCaptionText
	d.activity = widget.NewActivity()
	d.activity.Hide()

	// Two columns, so that everything fits a 720 px high window without
	// scrolling; the scroll is there for smaller windows.
	form := container.NewGridWithColumns(2,
		container.NewVBox(section("Agent (embedded relay)"), agent),
		container.NewVBox(section("Connection"), connection, section("Window"), window),
	)
	scroll := container.NewVScroll(container.NewPadded(form))
	scroll.SetMinSize(fyne.NewSize(960, 470))
	statusRow := container.NewBorder(nil, nil, d.activity, nil, d.status)
	content := container.NewBorder(nil, container.NewVBox(widget.NewSeparator(), statusRow), nil, nil, scroll)

	d.cancel = widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), d.close)
	d.apply = widget.NewButtonWithIcon("Apply", theme.ConfirmIcon(), d.applyChanges)
	d.apply.Importance = widget.HighImportance
	d.dlg = dialog.NewCustomWithoutButtons("Settings", content, w.win)
	d.dlg.SetButtons([]fyne.CanvasObject{d.cancel, d.apply})
	d.dlg.SetOnClosed(func() {
		// d.w, not w: a restart moves the open dialog to the new window.
		if d.w.settings == d {
			d.w.settings = nil
		}
	})

	for f := range d.locked {
		if o, ok := d.input(f).(fyne.Disableable); ok {
			o.Disable()
		}
		switch f {
		case FieldCopilotPath:
			d.copilotBrowse.Disable()
		case FieldWorkDir:
			d.workBrowse.Disable()
		}
	}
	d.connectionChanged()
	return d
}

func section(title string) fyne.CanvasObject {
	l := widget.NewLabelWithStyle(title, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	return container.NewVBox(l, widget.NewSeparator())
}

// item is one form row: the input, its hint (or why it is read-only) and
// a red line for its validation error.
func (d *settingsDialog) item(f SettingField, label string, input fyne.CanvasObject, hint string) *widget.FormItem {
	e := widget.NewLabel("")
	e.Importance = widget.DangerImportance
	e.Wrapping = fyne.TextWrapWord
	e.Hide()
	d.errs[f] = e
	it := widget.NewFormItem(label, container.NewVBox(input, e))
	if by, ok := d.locked[f]; ok {
		hint = "Set by " + by + " for this run"
	}
	it.HintText = hint
	d.items[f] = it
	return it
}

// input returns the widget that edits f.
func (d *settingsDialog) input(f SettingField) fyne.CanvasObject {
	switch f {
	case FieldAgent:
		return d.agent
	case FieldCopilotPath:
		return d.copilotPath
	case FieldModel:
		return d.model
	case FieldProviderURL:
		return d.providerURL
	case FieldProviderType:
		return d.providerType
	case FieldProviderKey:
		return d.providerKey
	case FieldWorkDir:
		return d.workDir
	case FieldInputTimeout:
		return d.inputTimeout
	case FieldNotifications:
		return d.notifications
	case FieldRemote:
		return d.connection
	case FieldRemoteURL:
		return d.remoteURL
	case FieldRemoteToken:
		return d.remoteToken
	}
	return nil
}

// connectionChanged enables the remote relay's fields only when it is
// picked.
func (d *settingsDialog) connectionChanged() {
	if d.remoteURL == nil || d.remoteToken == nil {
		return // still building
	}
	remote := d.connection.Selected == connRemote
	for _, f := range []SettingField{FieldRemoteURL, FieldRemoteToken} {
		e := d.input(f).(*widget.Entry)
		_, locked := d.locked[f]
		if remote && !locked && !d.busy {
			e.Enable()
		} else {
			e.Disable()
		}
	}
}

// read returns the settings the dialog shows, keeping the saved value of
// every field the command line fixed, and the problems found.
func (d *settingsDialog) read() (Settings, []FieldError) {
	s := d.saved
	var errs []FieldError
	free := func(f SettingField) bool { _, locked := d.locked[f]; return !locked }
	if free(FieldRemote) {
		s.Remote = d.connection.Selected == connRemote
	}
	if free(FieldRemoteURL) {
		s.RemoteURL = strings.TrimSpace(d.remoteURL.Text)
	}
	if free(FieldRemoteToken) {
		s.RemoteToken = d.remoteToken.Text
	}
	if free(FieldAgent) {
		s.Agent = agentValue(d.agent.Selected)
	}
	if free(FieldCopilotPath) {
		s.CopilotPath = strings.TrimSpace(d.copilotPath.Text)
	}
	if free(FieldModel) {
		s.Model = strings.TrimSpace(d.model.Text)
	}
	if free(FieldProviderURL) {
		s.ProviderURL = strings.TrimSpace(d.providerURL.Text)
	}
	if free(FieldProviderType) {
		s.ProviderType = d.providerType.Selected
	}
	if free(FieldProviderKey) {
		s.ProviderKey = strings.TrimSpace(d.providerKey.Text)
	}
	if free(FieldWorkDir) {
		s.WorkDir = strings.TrimSpace(d.workDir.Text)
	}
	if free(FieldInputTimeout) {
		t, err := ParseInputTimeout(d.inputTimeout.Text)
		if err != nil {
			errs = append(errs, FieldError{Field: FieldInputTimeout, Message: "Input timeout " + err.Error()})
		} else {
			s.InputTimeout = t
		}
	}
	s.Notifications = d.notifications.Checked
	for _, e := range s.Validate() {
		// A fixed field cannot be corrected here: the command line's
		// value is the one in use.
		if free(e.Field) && !(e.Field == FieldInputTimeout && len(errs) > 0) {
			errs = append(errs, e)
		}
	}
	return s, errs
}

// showErrors marks each bad field and clears the others.
func (d *settingsDialog) showErrors(errs []FieldError) {
	for f, l := range d.errs {
		msg := ""
		for _, e := range errs {
			if e.Field == f {
				msg = e.Message
				break
			}
		}
		if msg == "" {
			l.Hide()
		} else {
			l.SetText(msg)
			l.Show()
		}
	}
}

func (d *settingsDialog) setStatus(text string, imp widget.Importance) {
	d.status.Importance = imp
	d.status.SetText(text)
}

// setBusy locks the dialog while the relay restarts.
func (d *settingsDialog) setBusy(on bool) {
	d.busy = on
	for _, f := range allFields {
		if _, locked := d.locked[f]; locked {
			continue
		}
		if o, ok := d.input(f).(fyne.Disableable); ok {
			if on {
				o.Disable()
			} else {
				o.Enable()
			}
		}
	}
	for _, b := range []*widget.Button{d.apply, d.cancel, d.copilotBrowse, d.workBrowse} {
		if on {
			b.Disable()
		} else {
			b.Enable()
		}
	}
	for f, b := range map[SettingField]*widget.Button{FieldCopilotPath: d.copilotBrowse, FieldWorkDir: d.workBrowse} {
		if _, locked := d.locked[f]; locked {
			b.Disable()
		}
	}
	d.connectionChanged()
	if on {
		d.activity.Show()
		d.activity.Start()
	} else {
		d.activity.Stop()
		d.activity.Hide()
	}
}

func (d *settingsDialog) close() {
	if d.busy {
		return
	}
	d.dlg.Hide()
}

// applyChanges validates, saves, and applies: the model and notifications
// at once, the rest by restarting the relay.
func (d *settingsDialog) applyChanges() {
	if d.busy {
		return
	}
	s, errs := d.read()
	d.showErrors(errs)
	if len(errs) > 0 {
		what := "1 setting needs"
		if len(errs) > 1 {
			what = fmt.Sprintf("%d settings need", len(errs))
		}
		d.setStatus(what+" fixing: see the messages in red. Nothing was changed.", widget.DangerImportance)
		return
	}
	old := d.saved
	if s == old {
		d.close()
		return
	}
	prefs := d.w.app.Preferences()
	SaveSettings(prefs, s)
	d.w.log.Info("settings saved", "settings", s)
	if _, locked := d.locked[FieldModel]; !locked {
		d.w.opts.Model = s.Model
	}
	if !needsRestart(old, s) {
		d.close()
		return
	}
	if d.w.opts.Restart == nil {
		d.saved = s
		d.setStatus(settingsSavedNoHost, widget.MediumImportance)
		d.apply.Disable()
		d.cancel.SetText("Close")
		return
	}
	text := settingsRestarting
	if s.Remote {
		text = settingsReconnect
	}
	d.setStatus(text, widget.MediumImportance)
	d.setBusy(true)
	d.w.opts.Restart(func(err error) {
		d.setBusy(false)
		if err != nil {
			// Back to what runs: the relay is on the previous settings
			// again, and so are the preferences.
			SaveSettings(prefs, old)
			d.w.log.Warn("settings not applied", "err", err)
			d.setStatus("Not applied: "+err.Error()+". The previous settings are in use again; nothing was saved.", widget.DangerImportance)
			return
		}
		d.saved = s
		d.close()
	})
}

// pickCopilot opens a file picker for the Copilot CLI executable.
func (d *settingsDialog) pickCopilot() {
	fd := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil {
			d.setStatus("Could not open the file picker: "+err.Error(), widget.DangerImportance)
			return
		}
		if r == nil {
			return // cancelled
		}
		path := r.URI().Path()
		r.Close()
		d.copilotPath.SetText(path)
	}, d.w.win)
	if dir := existingDir(filepath.Dir(strings.TrimSpace(d.copilotPath.Text))); dir != "" {
		if l, err := storage.ListerForURI(storage.NewFileURI(dir)); err == nil {
			fd.SetLocation(l)
		}
	}
	fd.Show()
}

// pickWorkDir opens a folder picker for the working folder.
func (d *settingsDialog) pickWorkDir() {
	fd := dialog.NewFolderOpen(func(l fyne.ListableURI, err error) {
		if err != nil {
			d.setStatus("Could not open the folder picker: "+err.Error(), widget.DangerImportance)
			return
		}
		if l == nil {
			return // cancelled
		}
		d.workDir.SetText(l.Path())
	}, d.w.win)
	if dir := existingDir(strings.TrimSpace(d.workDir.Text)); dir != "" {
		if l, err := storage.ListerForURI(storage.NewFileURI(dir)); err == nil {
			fd.SetLocation(l)
		}
	}
	fd.Show()
}

func existingDir(dir string) string {
	if dir == "" || dir == "." {
		return ""
	}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return dir
	}
	return ""
}
