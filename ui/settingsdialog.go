package ui

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/settings"
)

// The Settings dialog edits the saved settings. It builds one input per
// row of the settings table (package settings), in the table's order, in a
// section per group. Flags given on the command line fix their settings for
// the run (Options.Locked): those show the value in use, read-only. The
// settings that apply live (the model, notifications, the working folder
// of new conversations) apply at once; the others restart the embedded
// relay (or connect to the remote one) through Options.Restart, which
// stops the turns that run.

// sectionTitles name the dialog's sections.
var sectionTitles = map[settings.Group]string{
	settings.GroupAgent:      "Agent (embedded relay)",
	settings.GroupConnection: "Connection",
	settings.GroupWindow:     "Window",
	settings.GroupBudget:     "AI credit budget (embedded relay)",
}

// Texts of the dialog's status line.
const (
	settingsNote        = "Changing the connection or the agent restarts the embedded relay: running turns stop, conversations stay. The model, notifications and working folder apply at once."
	settingsNoteNoHost  = "Changes to the connection or the agent apply when pilotdesk starts again. The model, notifications and working folder apply at once."
	settingsRestarting  = "Restarting the agent with the new settings…"
	settingsReconnect   = "Connecting to the relay…"
	settingsSavedNoHost = "Saved. The connection and agent settings apply when pilotdesk starts again."
)

type settingsDialog struct {
	w      *Window
	saved  settings.Settings // the preferences when the dialog opened
	locked map[settings.Field]string
	dlg    *dialog.CustomDialog

	inputs map[settings.Field]fyne.CanvasObject // the widget that edits each setting
	browse map[settings.Field]*escapeButton     // the pickers next to paths

	// found are the ACP agents' presets installed here, agents every
	// agent found (settings.FoundAgents), when the dialog opened.
	found  []settings.Choice
	agents []string

	scroll *container.Scroll // the groups, in two columns; see fit
	body   fyne.CanvasObject // what scroll holds

	errs     map[settings.Field]*widget.Label
	items    map[settings.Field]*widget.FormItem
	status   *widget.Label
	activity *widget.Activity
	apply    *escapeButton
	cancel   *escapeButton
	busy     bool
}

// ShowSettings opens the Settings dialog (Ctrl+, and the menu).
func (w *Window) ShowSettings() {
	if w.settings != nil {
		return
	}
	d := newSettingsDialog(w)
	w.settings = d
	d.fit(w.win.Canvas().Size().Height)
	d.dlg.Show()
	w.win.Canvas().Focus(d.inputs[settings.FieldModel].(fyne.Focusable))
}

func newSettingsDialog(w *Window) *settingsDialog {
	d := &settingsDialog{
		w:      w,
		saved:  settings.Load(w.app.Preferences(), settings.Defaults()),
		locked: w.opts.Locked,
		inputs: map[settings.Field]fyne.CanvasObject{},
		browse: map[settings.Field]*escapeButton{},
		errs:   map[settings.Field]*widget.Label{},
		items:  map[settings.Field]*widget.FormItem{},
	}
	// What the dialog shows: the saved value, or the one the command line
	// fixed.
	shown := d.saved
	for f := range d.locked {
		settings.Lookup(f).Copy(&shown, w.opts.Effective)
	}

	d.found = settings.Lookup(settings.FieldACPCommand).FoundPresets(nil)
	d.agents = settings.FoundAgents(shown, nil)

	// A form per group, a row per setting, but the budget and its period
	// share one row ("0 AI credits every 720h"), and so do the bounds on
	// open ACP sessions ("10m idle · at most 6 open"): two rows, and a
	// column would not fit a 720 px high window.
	forms := map[settings.Group]*widget.Form{}
	for _, r := range settings.All() {
		if forms[r.Group] == nil {
			forms[r.Group] = widget.NewForm()
		}
		in := d.newInput(r, shown)
		switch r.Field {
		case settings.FieldBudgetCredits, settings.FieldACPIdleClose:
			continue // in the next one's row
		case settings.FieldBudgetPeriod:
			forms[r.Group].AppendItem(d.budgetItem(d.inputs[settings.FieldBudgetCredits], in))
			continue
		case settings.FieldACPMaxOpen:
			forms[r.Group].AppendItem(d.acpSessionsItem(d.inputs[settings.FieldACPIdleClose], in))
			continue
		}
		forms[r.Group].AppendItem(d.item(r, in))
	}

	note := settingsNote
	if w.opts.Restart == nil {
		note = settingsNoteNoHost
	}
	d.status = widget.NewLabel(note)
	d.status.Wrapping = fyne.TextWrapWord
	d.status.SizeName = theme.SizeNameCaptionText
	d.activity = widget.NewActivity()
	d.activity.Hide()

	// Two columns, so that every group shows whole in a 720 px high window
	// (the app's default size) without scrolling: the agent's group on the
	// left, the connection, the window and the budget on the right. The
	// scroll is there for smaller windows (fit).
	section := func(g settings.Group) []fyne.CanvasObject {
		return []fyne.CanvasObject{sectionHeader(sectionTitles[g]), forms[g]}
	}
	form := container.NewGridWithColumns(2,
		container.NewVBox(section(settings.GroupAgent)...),
		container.NewVBox(append(append(section(settings.GroupConnection), section(settings.GroupWindow)...), section(settings.GroupBudget)...)...),
	)
	d.body = container.NewPadded(form)
	d.scroll = container.NewVScroll(d.body)
	d.scroll.SetMinSize(fyne.NewSize(settingsWidth, d.body.MinSize().Height))
	statusRow := container.NewBorder(nil, nil, d.activity, nil, d.status)
	content := container.NewBorder(nil, container.NewVBox(widget.NewSeparator(), statusRow), nil, nil, d.scroll)

	d.cancel = newEscapeButton("Cancel", theme.CancelIcon(), d.close, d.close)
	d.apply = newEscapeButton("Apply", theme.ConfirmIcon(), d.applyChanges, d.close)
	d.apply.Importance = widget.HighImportance
	d.dlg = dialog.NewCustomWithoutButtons("Settings", content, w.win)
	d.dlg.SetButtons([]fyne.CanvasObject{d.cancel, d.apply})
	d.dlg.SetOnClosed(func() {
		if w.settings == d {
			w.settings = nil
		}
	})

	for f := range d.locked {
		if o, ok := d.inputs[f].(fyne.Disableable); ok {
			o.Disable()
		}
		if b := d.browse[f]; b != nil {
			b.Disable()
		}
	}
	d.connectionChanged()
	return d
}

// newInput builds the widget that edits r, showing its value in s: a radio
// group or a select for a setting with choices, an entry with suggestions
// for a duration, a check box for a flag, a password entry for a secret,
// an entry otherwise.
func (d *settingsDialog) newInput(r settings.Setting, s settings.Settings) fyne.CanvasObject {
	var in fyne.CanvasObject
	labels := make([]string, len(r.Choices))
	for i, c := range r.Choices {
		labels[i] = c.Label
	}
	value := r.Text(s)
	switch {
	case r.Kind == settings.KindBool && len(r.Choices) > 0:
		// The switch between the embedded and the remote relay: it
		// enables the remote relay's fields. A select, not radio buttons:
		// one line instead of two keeps the right column in a 720 px
		// window.
		sel := newEscapeSelect(labels, func(string) { d.connectionChanged() }, d.close)
		sel.SetSelected(r.ChoiceLabel(value))
		in = sel
	case r.Kind == settings.KindBool:
		c := newEscapeCheck(r.Placeholder, d.close)
		c.SetChecked(value == "true")
		in = c
	case r.Kind == settings.KindDuration:
		e := newEscapeSelectEntry(d.close)
		e.SetOptions(labels)
		e.SetText(value)
		in = e
	case len(r.Presets) > 0 && !r.Secret:
		// The agents found on PATH to pick from, and any command line.
		cmds := make([]string, len(d.found))
		for i, p := range d.found {
			cmds[i] = p.Value
		}
		e := newEscapeSelectEntry(d.close)
		e.SetOptions(cmds)
		e.SetPlaceHolder(r.Placeholder)
		e.SetText(value)
		e.OnChanged = func(text string) {
			if r.PresetLabel(text) != "" {
				d.pickACP()
			}
		}
		in = e
	case len(r.Choices) > 0:
		sel := newEscapeSelect(labels, nil, d.close)
		sel.SetSelected(r.ChoiceLabel(value))
		in = sel
	default:
		e := newEscapeEntry(r.Secret, d.close)
		e.SetPlaceHolder(r.Placeholder)
		e.SetText(value)
		in = e
	}
	d.inputs[r.Field] = in
	switch r.Browse {
	case settings.BrowseFile:
		d.browse[r.Field] = newEscapeButton("Browse…", theme.FileIcon(), func() { d.pickFile(r.Field) }, d.close)
	case settings.BrowseFolder:
		d.browse[r.Field] = newEscapeButton("Browse…", theme.FolderOpenIcon(), func() { d.pickFolder(r.Field) }, d.close)
	}
	if b := d.browse[r.Field]; b != nil {
		return container.NewBorder(nil, nil, nil, b, in)
	}
	return in
}

// settingsWidth is the width of the dialog's groups: two columns of forms.
const settingsWidth = 960

// fit sizes the dialog to its groups, so that it shows them all without
// scrolling, unless the window (canvasHeight high) is too small for that:
// then the groups scroll in what the window leaves.
func (d *settingsDialog) fit(canvasHeight float32) {
	want := d.body.MinSize().Height
	around := d.dlg.MinSize().Height - d.scroll.MinSize().Height // title, status, buttons
	room := canvasHeight - around - 2*theme.Padding()
	h := min(want, max(room, 200))
	d.scroll.SetMinSize(fyne.NewSize(settingsWidth, h))
}

func sectionHeader(title string) fyne.CanvasObject {
	l := widget.NewLabelWithStyle(title, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	return container.NewVBox(l, widget.NewSeparator())
}

// item is one form row: the input, its hint (or why it is read-only) and
// a red line for its validation error.
func (d *settingsDialog) item(r settings.Setting, input fyne.CanvasObject) *widget.FormItem {
	e := widget.NewLabel("")
	e.Importance = widget.DangerImportance
	e.Wrapping = fyne.TextWrapWord
	e.Hide()
	d.errs[r.Field] = e
	it := widget.NewFormItem(r.Label, container.NewVBox(input, e))
	it.HintText = r.Hint
	switch r.Field {
	case settings.FieldAgent:
		it.HintText = agentsHint(d.agents)
	case settings.FieldACPCommand:
		it.HintText = presetsHint(d.found)
	}
	if by, ok := d.locked[r.Field]; ok {
		it.HintText = "Set by " + by + " for this run"
	}
	d.items[r.Field] = it
	return it
}

// budgetPeriodWidth is the width of the budget period's entry, and of the
// idle ACP session's.
const budgetPeriodWidth = 130

// budgetHint is the hint of the budget's row, both settings' in short (the
// table's two side by side would widen the dialog).
const budgetHint = "0: no budget · the period: 24h, 168h (a week), 720h (30 days)…"

// budgetItem is the budget's row: "[credits] AI credits every [period]".
func (d *settingsDialog) budgetItem(credits, period fyne.CanvasObject) *widget.FormItem {
	every := widget.NewLabel("AI credits every")
	// The period's entry as wide as "720h" and its menu button need; the
	// credits take the rest.
	wide := fyne.NewSize(budgetPeriodWidth, period.MinSize().Height)
	row := container.NewBorder(nil, nil, nil, container.NewHBox(every, container.NewGridWrap(wide, period)), credits)
	return d.pairItem(settings.FieldBudgetCredits, settings.FieldBudgetPeriod, row, budgetHint)
}

// acpSessionsLabel and acpSessionsHint are the label and the hint of the
// row of the bounds on open ACP sessions (one row for the two, as for the
// budget: two rows would not fit the left column in a 720 px window).
const (
	acpSessionsLabel = "ACP sessions"
	acpSessionsHint  = "An idle one closes; its next message reloads it · never, 0: no bound"
)

// acpSessionsItem is the row of the bounds on open ACP sessions:
// "[10m] idle · at most [6] open".
func (d *settingsDialog) acpSessionsItem(idle, open fyne.CanvasObject) *widget.FormItem {
	wide := fyne.NewSize(budgetPeriodWidth, idle.MinSize().Height)
	row := container.NewBorder(nil, nil,
		container.NewHBox(container.NewGridWrap(wide, idle), widget.NewLabel("idle · at most")),
		widget.NewLabel("open"), open)
	it := d.pairItem(settings.FieldACPIdleClose, settings.FieldACPMaxOpen, row, acpSessionsHint)
	it.Text = acpSessionsLabel
	return it
}

// pairItem is a row that holds two settings, first and second (the first
// one's label), with a red line for each one's validation error.
func (d *settingsDialog) pairItem(first, second settings.Field, row fyne.CanvasObject, hint string) *widget.FormItem {
	var errs []fyne.CanvasObject
	for _, f := range []settings.Field{first, second} {
		e := widget.NewLabel("")
		e.Importance = widget.DangerImportance
		e.Wrapping = fyne.TextWrapWord
		e.Hide()
		d.errs[f] = e
		errs = append(errs, e)
	}
	it := widget.NewFormItem(settings.Lookup(first).Label, container.NewVBox(append([]fyne.CanvasObject{row}, errs...)...))
	it.HintText = hint
	var by []string
	for _, f := range []settings.Field{first, second} {
		if flag, ok := d.locked[f]; ok {
			by = append(by, flag)
		}
	}
	if len(by) > 0 {
		it.HintText = "Set by " + strings.Join(by, " and ") + " for this run"
	}
	d.items[first], d.items[second] = it, it
	return it
}

// agentsHint says which agents are installed, under the agent's select:
// three by name at most, so that the dialog keeps its width.
func agentsHint(found []string) string {
	switch {
	case len(found) == 0:
		return "No Copilot CLI or known ACP agent on PATH"
	case len(found) > 3:
		return fmt.Sprintf("On PATH: %s and %d more", strings.Join(found[:3], ", "), len(found)-3)
	}
	return "On PATH: " + strings.Join(found, ", ")
}

// presetsHint says what the ACP agent's entry offers.
func presetsHint(found []settings.Choice) string {
	switch len(found) {
	case 0:
		return "None known on PATH: type your agent's command line"
	case 1:
		return "Pick " + found[0].Label + " (on PATH) or type a command line"
	}
	return fmt.Sprintf("Pick one of the %d on PATH or type a command line", len(found))
}

// pickACP selects "An ACP agent" as the agent: a preset of the ACP agent's
// command line was picked or typed.
func (d *settingsDialog) pickACP() {
	if _, locked := d.locked[settings.FieldAgent]; locked {
		return
	}
	if sel, ok := d.inputs[settings.FieldAgent].(*escapeSelect); ok {
		sel.SetSelected(settings.Lookup(settings.FieldAgent).ChoiceLabel(settings.AgentACP))
	}
}

// text is what the input of f holds, as settings.Setting.SetText reads it.
func (d *settingsDialog) text(f settings.Field) string {
	r := settings.Lookup(f)
	switch in := d.inputs[f].(type) {
	case *escapeSelect:
		return r.ChoiceValue(in.Selected)
	case *escapeCheck:
		return strconv.FormatBool(in.Checked)
	case *escapeSelectEntry:
		return in.Text
	case *escapeEntry:
		return in.Text
	}
	return ""
}

// remoteSelected reports whether the dialog has the remote relay picked.
func (d *settingsDialog) remoteSelected() bool {
	return d.text(settings.FieldRemote) == "true"
}

// connectionChanged enables the remote relay's fields only when it is
// picked, and the embedded relay's (reachable from the network) only when
// it is.
func (d *settingsDialog) connectionChanged() {
	if _, built := d.inputs[settings.FieldRemote]; !built || d.status == nil {
		return // still building
	}
	remote := d.remoteSelected()
	for _, r := range settings.All() {
		on := r.InUse(settings.Settings{Remote: remote})
		if r.Group != settings.GroupConnection || r.Field == settings.FieldRemote {
			continue
		}
		e, ok := d.inputs[r.Field].(fyne.Disableable)
		if !ok {
			continue
		}
		_, locked := d.locked[r.Field]
		if on && !locked && !d.busy {
			e.Enable()
		} else {
			e.Disable()
		}
	}
}

// read returns the settings the dialog shows, keeping the saved value of
// every setting the command line fixed, and the problems found.
func (d *settingsDialog) read() (settings.Settings, []settings.FieldError) {
	s := d.saved
	var errs []settings.FieldError
	unreadable := map[settings.Field]bool{}
	free := func(f settings.Field) bool { _, locked := d.locked[f]; return !locked }
	for _, r := range settings.All() {
		if !free(r.Field) {
			continue
		}
		if err := r.SetText(&s, d.text(r.Field)); err != nil {
			unreadable[r.Field] = true
			errs = append(errs, settings.FieldError{Field: r.Field, Message: r.Label + " " + err.Error()})
		}
	}
	for _, e := range s.ValidateAll() {
		// A fixed setting cannot be corrected here: the command line's
		// value is the one in use.
		if free(e.Field) && !unreadable[e.Field] {
			errs = append(errs, e)
		}
	}
	return s, errs
}

// showErrors marks each bad setting and clears the others.
func (d *settingsDialog) showErrors(errs []settings.FieldError) {
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
	d.refit()
}

// refit sizes the dialog again to its groups once messages came or went:
// they change the groups' height, which neither the dialog nor the
// scroll around them follows by itself (the messages were cut off or
// drawn over the rows below). Twice, as a message wraps at the width it
// was last laid out to.
func (d *settingsDialog) refit() {
	for range 2 {
		d.fit(d.w.win.Canvas().Size().Height)
		d.dlg.Resize(d.dlg.MinSize())
		d.scroll.Refresh() // lays the groups out again if the dialog kept its size
	}
}

func (d *settingsDialog) setStatus(text string, imp widget.Importance) {
	d.status.Importance = imp
	d.status.SetText(text)
}

// setBusy locks the dialog while the relay restarts.
func (d *settingsDialog) setBusy(on bool) {
	d.busy = on
	for _, r := range settings.All() {
		if _, locked := d.locked[r.Field]; locked {
			continue
		}
		if o, ok := d.inputs[r.Field].(fyne.Disableable); ok {
			if on {
				o.Disable()
			} else {
				o.Enable()
			}
		}
		if b := d.browse[r.Field]; b != nil {
			if on {
				b.Disable()
			} else {
				b.Enable()
			}
		}
	}
	for _, b := range []*escapeButton{d.apply, d.cancel} {
		if on {
			b.Disable()
		} else {
			b.Enable()
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

// applyChanges validates, saves, and applies: what applies live at once,
// the rest by restarting the relay.
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
	settings.Save(prefs, s)
	d.w.log.Info("settings saved", "settings", s)
	d.w.applyLive(s)
	if !settings.NeedsRestart(old, s) && !d.w.folderRefused(old, s) {
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
			settings.Save(prefs, old)
			d.w.applyLive(old)
			d.w.log.Warn("settings not applied", "err", err)
			d.setStatus("Not applied: "+err.Error()+". The previous settings are in use again; nothing was saved.", widget.DangerImportance)
			return
		}
		d.saved = s
		d.close()
	})
}

// applyLive applies the settings that apply live (settings.Live) and that
// the command line did not fix. Notifications are read when there is
// something to notify: only the model is kept here.
func (w *Window) applyLive(s settings.Settings) {
	if _, locked := w.opts.Locked[settings.FieldModel]; !locked {
		w.opts.Model = s.Model
	}
	if _, locked := w.opts.Locked[settings.FieldWorkDir]; !locked {
		// The default folder of the conversations started from now on
		// (defaultFolder); running ones keep theirs.
		w.opts.Effective.WorkDir = s.WorkDir
	}
}

// folderRefused reports whether the working folder changed (old to s) to
// one the app's relay would refuse as a workspace (outside its roots, the
// user's home): only a relay started with it as its default folder takes
// it, so that change restarts the relay. Any other folder applies live.
func (w *Window) folderRefused(old, s settings.Settings) bool {
	if old.WorkDir == s.WorkDir || s.Remote || w.opts.CheckFolder == nil {
		return false
	}
	if _, locked := w.opts.Locked[settings.FieldWorkDir]; locked {
		return false
	}
	dir := w.defaultFolder()
	if dir == "" {
		return false
	}
	if _, err := w.opts.CheckFolder(dir); err != nil {
		w.log.Info("the new working folder is outside the relay's roots: restarting the relay with it as its default folder", "dir", dir, "why", err)
		return true
	}
	return false
}

// entryOf returns the entry of a path setting.
func (d *settingsDialog) entryOf(f settings.Field) *widget.Entry {
	if e, ok := d.inputs[f].(*escapeEntry); ok {
		return &e.Entry
	}
	return nil
}

// pickFile opens a file picker for a path setting (the Copilot CLI).
func (d *settingsDialog) pickFile(f settings.Field) {
	e := d.entryOf(f)
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
		e.SetText(path)
	}, d.w.win)
	if dir := existingDir(filepath.Dir(strings.TrimSpace(e.Text))); dir != "" {
		startIn(fd, dir)
	}
	fd.Show()
}

// pickFolder opens a folder picker for a folder setting (the working
// folder).
func (d *settingsDialog) pickFolder(f settings.Field) {
	e := d.entryOf(f)
	fd := dialog.NewFolderOpen(func(l fyne.ListableURI, err error) {
		if err != nil {
			d.setStatus("Could not open the folder picker: "+err.Error(), widget.DangerImportance)
			return
		}
		if l == nil {
			return // cancelled
		}
		e.SetText(l.Path())
	}, d.w.win)
	if dir := existingDir(strings.TrimSpace(e.Text)); dir != "" {
		startIn(fd, dir)
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
