package ui

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/settings"
)

// TestSettingsPersistInPreferences: what settings.Save writes to Fyne's
// preferences, settings.Load reads back; missing values come from the
// defaults.
func TestSettingsPersistInPreferences(t *testing.T) {
	a := test.NewTempApp(t)
	def := settings.Defaults()
	if got := settings.Load(a.Preferences(), def); got != def {
		t.Fatalf("empty preferences: %+v, want the defaults", got)
	}
	s := settings.Settings{Agent: settings.AgentCopilot, CopilotPath: "/opt/copilot", Model: "gpt-5", ProviderURL: "http://127.0.0.1:8080/v1",
		ProviderType: "azure", ProviderKey: "k", WorkDir: "/src", InputTimeout: 0, Notifications: false,
		Remote: true, RemoteURL: "wss://relay/ws", RemoteToken: "t"}
	settings.Save(a.Preferences(), s)
	if got := settings.Load(a.Preferences(), def); got != s {
		t.Fatalf("read back %+v, want %+v", got, s)
	}
	// Preferences without a batch write get one call per key.
	s.Model, s.Remote, s.InputTimeout = "other", false, time.Hour
	settings.Save(struct{ fyne.Preferences }{a.Preferences()}, s)
	if got := settings.Load(a.Preferences(), def); got != s {
		t.Fatalf("read back %+v, want %+v", got, s)
	}
	// A value the user could not have typed falls back to the default.
	a.Preferences().SetString(settings.Lookup(settings.FieldInputTimeout).PrefKey(), "soon")
	if got := settings.Load(a.Preferences(), def).InputTimeout; got != def.InputTimeout {
		t.Fatalf("bad stored timeout read as %v", got)
	}
}

// The dialog's inputs, by setting, as the tests type into them.
func (d *settingsDialog) entry(f settings.Field) *widget.Entry {
	return &d.inputs[f].(*escapeEntry).Entry
}
func (d *settingsDialog) selectEntry(f settings.Field) *widget.SelectEntry {
	return &d.inputs[f].(*escapeSelectEntry).SelectEntry
}
func (d *settingsDialog) check(f settings.Field) *widget.Check {
	return &d.inputs[f].(*escapeCheck).Check
}
func (d *settingsDialog) selector(f settings.Field) *widget.Select {
	return &d.inputs[f].(*escapeSelect).Select
}

func TestSettingsShortcutAndMenu(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.w.shortcut(shortcutSettings)
	if h.w.settings == nil || len(h.w.Window().Canvas().Overlays().List()) == 0 {
		t.Fatal("Ctrl+, did not open Settings")
	}
	h.w.settings.close()
	if h.w.settings != nil {
		t.Fatal("Cancel left the dialog open")
	}
	menu := h.w.mainMenu()
	var labels []string
	for _, m := range menu.Items {
		for _, it := range m.Items {
			if !it.IsSeparator {
				labels = append(labels, m.Label+"/"+it.Label)
			}
		}
	}
	if got := strings.Join(labels, ", "); got != "File/New conversation, File/Open folder, File/Delete conversation…, File/Connect a device…, File/Settings…, File/Quit, View/Group by folder, Help/About pilotdesk" {
		t.Fatalf("menu %s", got)
	}
	menu.Items[len(menu.Items)-1].Items[0].Action()
	if h.w.about == nil {
		t.Fatal("Help → About did not open the About dialog")
	}
}

// TestSettingsValidationMessages: bad input is refused field by field and
// nothing is saved.
func TestSettingsValidationMessages(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.w.ShowSettings()
	d := h.w.settings
	d.selector(settings.FieldRemote).SetSelected(settings.Lookup(settings.FieldRemote).ChoiceLabel("true"))
	d.entry(settings.FieldRemoteURL).SetText("http://relay.example.com")
	d.entry(settings.FieldWorkDir).SetText(filepath.Join(t.TempDir(), "missing"))
	d.selectEntry(settings.FieldInputTimeout).SetText("soon")
	d.entry(settings.FieldModel).SetText("gpt-5")
	test.Tap(d.apply)

	want := map[settings.Field]string{
		settings.FieldRemoteURL:    `"http://relay.example.com" is not a relay address: use ws://host:7420/ws or wss://host/ws`,
		settings.FieldWorkDir:      "does not exist",
		settings.FieldInputTimeout: `Input timeout "soon" is not a duration: write it like 90s, 5m or 1h, or never`,
	}
	for f, l := range d.errs {
		msg, bad := want[f]
		switch {
		case bad && (!l.Visible() || !strings.Contains(l.Text, msg)):
			t.Errorf("%s: shown %v %q, want %q", f, l.Visible(), l.Text, msg)
		case !bad && l.Visible():
			t.Errorf("%s: unexpected error %q", f, l.Text)
		}
	}
	if d.status.Text != "3 settings need fixing: see the messages in red. Nothing was changed." {
		t.Errorf("status %q", d.status.Text)
	}
	if got := settings.Load(h.app.Preferences(), settings.Defaults()); got != settings.Defaults() {
		t.Errorf("saved despite the errors: %+v", got)
	}
	if h.w.opts.Model != "" {
		t.Errorf("model applied despite the errors")
	}
	// Fixed: the errors go and the settings are saved.
	d.entry(settings.FieldRemoteURL).SetText("ws://relay.example.com:7420/ws")
	d.entry(settings.FieldWorkDir).SetText(t.TempDir())
	d.selectEntry(settings.FieldInputTimeout).SetText("never")
	test.Tap(d.apply)
	for f, l := range d.errs {
		if l.Visible() {
			t.Errorf("%s still shows %q", f, l.Text)
		}
	}
	got := settings.Load(h.app.Preferences(), settings.Defaults())
	if !got.Remote || got.RemoteURL != "ws://relay.example.com:7420/ws" || got.InputTimeout != 0 || got.Model != "gpt-5" {
		t.Errorf("saved %+v", got)
	}
	// No Restart hook: saved for the next start, and the dialog says so.
	if d.status.Text != settingsSavedNoHost {
		t.Errorf("status %q", d.status.Text)
	}
}

// TestSettingsACPSessions: the bounds on open ACP sessions are one row of
// the dialog, which shows the saved values, refuses a bad one with a
// message under the row, and saves what is typed.
func TestSettingsACPSessions(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	saved := settings.Defaults()
	saved.ACPMaxSessions = 4
	settings.Save(h.app.Preferences(), saved)
	h.w.ShowSettings()
	d := h.w.settings
	idle, open := d.selectEntry(settings.FieldACPIdleClose), d.entry(settings.FieldACPMaxOpen)
	if idle.Text != "10m" || open.Text != "4" {
		t.Fatalf("the row shows %q and %q, want 10m and 4", idle.Text, open.Text)
	}
	if d.items[settings.FieldACPIdleClose] != d.items[settings.FieldACPMaxOpen] || d.items[settings.FieldACPMaxOpen].Text != acpSessionsLabel {
		t.Fatal("the two settings are not one row")
	}
	open.SetText("-2")
	test.Tap(d.apply)
	if l := d.errs[settings.FieldACPMaxOpen]; !l.Visible() || !strings.Contains(l.Text, "from 1 up, or 0 for no bound") {
		t.Fatalf("error under the row: %v %q", l.Visible(), l.Text)
	}
	idle.SetText("never")
	open.SetText("2")
	test.Tap(d.apply)
	got := settings.Load(h.app.Preferences(), settings.Defaults())
	if got.ACPIdleClose != 0 || got.ACPMaxSessions != 2 {
		t.Fatalf("saved idle close %v, open sessions %d; want never, 2", got.ACPIdleClose, got.ACPMaxSessions)
	}
}

// TestSettingsApply: the model and notifications apply at once without a
// restart; the agent's settings go through Restart; a failed restart puts
// the previous preferences back. The key never reaches the log.
func TestSettingsApply(t *testing.T) {
	logger, logs := captureLogs()
	var restarts int
	var fail error
	opts := Options{Logger: logger, Restart: func(done func(error)) { restarts++; done(fail) }}
	h := newHarness(t, harnessConfig{options: opts})

	h.w.ShowSettings()
	d := h.w.settings
	d.entry(settings.FieldModel).SetText("gpt-5")
	d.check(settings.FieldNotifications).SetChecked(false)
	test.Tap(d.apply)
	if restarts != 0 || h.w.settings != nil {
		t.Fatalf("model and notifications: %d restarts, dialog open %v", restarts, h.w.settings != nil)
	}
	if h.w.opts.Model != "gpt-5" || h.w.notifier.notificationsOn() {
		t.Fatalf("not applied at once: model %q, notifications %v", h.w.opts.Model, h.w.notifier.notificationsOn())
	}

	h.w.ShowSettings()
	d = h.w.settings
	if d.entry(settings.FieldModel).Text != "gpt-5" || d.check(settings.FieldNotifications).Checked {
		t.Fatalf("the dialog does not show the saved values: %q %v", d.entry(settings.FieldModel).Text, d.check(settings.FieldNotifications).Checked)
	}
	if d.entry(settings.FieldProviderKey).Password != true {
		t.Fatal("the provider key is not a password entry")
	}
	d.entry(settings.FieldProviderKey).SetText("sk-live-TOPSECRET")
	d.selector(settings.FieldAgent).SetSelected(settings.Lookup(settings.FieldAgent).ChoiceLabel(settings.AgentDemo))
	fail = errors.New("the Copilot agent cannot start")
	test.Tap(d.apply)
	if restarts != 1 || h.w.settings == nil {
		t.Fatalf("restarts %d, dialog open %v", restarts, h.w.settings != nil)
	}
	if !strings.HasPrefix(d.status.Text, "Not applied: the Copilot agent cannot start.") {
		t.Fatalf("status %q", d.status.Text)
	}
	if got := settings.Load(h.app.Preferences(), settings.Defaults()); got.ProviderKey != "" || got.Agent != settings.AgentAuto {
		t.Fatalf("a failed restart left the new preferences: %+v", got)
	}
	fail = nil
	test.Tap(d.apply)
	if restarts != 2 || h.w.settings != nil {
		t.Fatalf("restarts %d, dialog open %v", restarts, h.w.settings != nil)
	}
	if got := settings.Load(h.app.Preferences(), settings.Defaults()); got.ProviderKey != "sk-live-TOPSECRET" || got.Agent != settings.AgentDemo {
		t.Fatalf("saved %+v", got)
	}
	out := logs()
	if strings.Contains(out, "TOPSECRET") {
		t.Fatalf("the key is in the log:\n%s", out)
	}
	if !strings.Contains(out, "providerKey=********") {
		t.Fatalf("the settings were not logged (masked):\n%s", out)
	}
}

// TestSettingsLockedByCommandLine: a field the command line fixed shows
// the value in use, read-only, and its saved value is left alone.
func TestSettingsLockedByCommandLine(t *testing.T) {
	eff := settings.Defaults()
	eff.Model = "from-flag"
	h := newHarness(t, harnessConfig{options: Options{Effective: eff, Locked: map[settings.Field]string{settings.FieldModel: "--model"}, Model: "from-flag"}})
	settings.Save(h.app.Preferences(), settings.Settings{Agent: settings.AgentAuto, ProviderType: "openai", InputTimeout: time.Minute, Model: "saved-model", Notifications: true})
	h.w.ShowSettings()
	d := h.w.settings
	model := d.entry(settings.FieldModel)
	if model.Text != "from-flag" || !model.Disabled() {
		t.Fatalf("model entry %q disabled %v", model.Text, model.Disabled())
	}
	if hint := d.items[settings.FieldModel].HintText; hint != "Set by --model for this run" {
		t.Fatalf("hint %q", hint)
	}
	d.selectEntry(settings.FieldInputTimeout).SetText("2m")
	test.Tap(d.apply)
	got := settings.Load(h.app.Preferences(), settings.Defaults())
	if got.Model != "saved-model" || got.InputTimeout != 2*time.Minute {
		t.Fatalf("saved %+v", got)
	}
	if h.w.opts.Model != "from-flag" {
		t.Fatalf("the window's model changed to %q", h.w.opts.Model)
	}
}

// TestSettingsFitsTheWindow: in the app's default window (1100×720) the
// dialog shows every group whole, nothing scrolls; in a smaller one it
// stays inside the window and the groups scroll.
func TestSettingsFitsTheWindow(t *testing.T) {
	for _, c := range []struct {
		size   fyne.Size
		scroll bool
	}{
		{fyne.NewSize(1100, 720), false},
		{fyne.NewSize(1100, 560), true},
	} {
		h := newHarness(t, harnessConfig{size: c.size})
		h.w.ShowSettings()
		h.frame()
		d := h.w.settings
		body, shown := d.body.MinSize().Height, d.scroll.Size().Height
		if scrolls := shown < body; scrolls != c.scroll {
			t.Errorf("%v: the groups need %.0f px, the dialog shows %.0f: scrolls %v, want %v", c.size, body, shown, scrolls, c.scroll)
		}
		if top := h.w.Window().Canvas().Overlays().Top(); top.MinSize().Height > c.size.Height {
			t.Errorf("%v: the dialog needs %.0f px, more than the window", c.size, top.MinSize().Height)
		}
		d.close()
	}
}

// TestSettingsErrorsShowWhole: the messages in red that Apply shows make
// the groups taller; the dialog grows to the window and scrolls the rest,
// so that every message shows whole, neither cut off nor over the rows
// below it (the dialog kept the size it opened with, and the groups
// their layout).
func TestSettingsErrorsShowWhole(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(1100, 720)})
	h.w.ShowSettings()
	h.frame()
	d := h.w.settings
	d.selector(settings.FieldRemote).SetSelected(settings.Lookup(settings.FieldRemote).ChoiceLabel("true"))
	d.entry(settings.FieldRemoteURL).SetText("http://relay.example.com")
	d.entry(settings.FieldWorkDir).SetText(filepath.Join(t.TempDir(), "missing"))
	d.selectEntry(settings.FieldInputTimeout).SetText("soon")
	test.Tap(d.apply)
	h.frame()
	if got, want := d.body.Size().Height, d.body.MinSize().Height; got < want {
		t.Errorf("the groups are laid out %.0f px high, they need %.0f: their rows overlap", got, want)
	}
	shown := 0
	for f, l := range d.errs {
		if !l.Visible() {
			continue
		}
		shown++
		if got, want := l.Size().Height, l.MinSize().Height; got < want || l.Size().Width <= 0 {
			t.Errorf("%s: its message is %v, it needs %.0f px high: cut off", f, l.Size(), want)
		}
	}
	if shown != 3 {
		t.Fatalf("%d messages shown, want 3", shown)
	}
	if top := h.w.Window().Canvas().Overlays().Top(); top.MinSize().Height > 720 {
		t.Errorf("the dialog needs %.0f px, more than the window", top.MinSize().Height)
	}
}
