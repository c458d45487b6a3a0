package ui

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session/script"
	"github.com/pilotdesk/pilotdesk/settings"
	"github.com/pilotdesk/pilotdesk/ui/uitest"
)

// ---- pure parts ----

func TestShouldNotify(t *testing.T) {
	for _, c := range []struct {
		focused, enabled bool
		kind             notifyKind
		want             bool
	}{
		{false, true, notifyQuestion, true},
		{false, true, notifyTurnEnded, true},
		{false, true, notifyNone, false},
		{true, true, notifyQuestion, false},
		{true, true, notifyTurnEnded, false},
		{false, false, notifyQuestion, false},
		{false, false, notifyTurnEnded, false},
		{true, false, notifyTurnEnded, false},
	} {
		if got := shouldNotify(c.focused, c.enabled, c.kind); got != c.want {
			t.Errorf("shouldNotify(focused=%v, enabled=%v, kind=%d) = %v, want %v", c.focused, c.enabled, c.kind, got, c.want)
		}
	}
}

// TestLiveTracker: history replayed before copilot:subscribed notifies
// nothing; live events do; a reset makes the replay that follows quiet.
func TestLiveTracker(t *testing.T) {
	h := func(id string) protocol.Header { return protocol.Header{ConversationID: id, Seq: 1} }
	ask := func(id string) client.Event {
		return client.Event{Type: protocol.TypeUserInputRequest, Data: &protocol.UserInputRequest{Header: h(id), RequestID: "r", Question: "q?"}}
	}
	idle := func(id string) client.Event {
		return client.Event{Type: protocol.TypeIdle, Data: &protocol.Idle{Header: h(id), Status: protocol.StatusCompleted}}
	}
	subscribed := client.Event{Type: protocol.TypeSubscribed, Data: &protocol.Subscribed{ConversationID: "a"}}
	var lt liveTracker
	steps := []struct {
		ev   client.Event
		want notifyKind
	}{
		{ask("a"), notifyNone}, // replay
		{idle("a"), notifyNone},
		{subscribed, notifyNone},
		{ask("a"), notifyQuestion},
		{idle("a"), notifyTurnEnded},
		{idle("b"), notifyNone}, // never subscribed
		{client.Event{Type: client.TypeReset, Data: &client.Reset{ConversationID: "a"}}, notifyNone},
		{idle("a"), notifyNone}, // replayed again
		{subscribed, notifyNone},
		{idle("a"), notifyTurnEnded},
	}
	for i, s := range steps {
		if got := lt.observe(s.ev).kind; got != s.want {
			t.Fatalf("step %d (%s): kind %d, want %d", i, s.ev.Type, got, s.want)
		}
	}
}

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

// ---- the window ----

// texts returns the text of every label, hyperlink, entry and rich text
// under o, in order.
func texts(o fyne.CanvasObject) []string {
	var out []string
	uitest.Walk(o, func(o fyne.CanvasObject) bool {
		switch x := o.(type) {
		case *widget.Label:
			out = append(out, x.Text)
		case *widget.Hyperlink:
			out = append(out, x.Text+" <"+x.URL.String()+">")
		case *widget.RichText:
			out = append(out, strings.ReplaceAll(x.String(), zeroWidth, "")) // wordSegments
		case *widget.Entry:
			out = append(out, x.Text)
		default:
			return true
		}
		return false
	})
	return out
}

func captureLogs() (*slog.Logger, func() string) {
	var mu sync.Mutex
	var buf bytes.Buffer
	h := slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug})
	return slog.New(h), func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// The dialog's inputs, by setting, as the tests type into them.
func (d *settingsDialog) entry(f settings.Field) *widget.Entry { return d.inputs[f].(*widget.Entry) }
func (d *settingsDialog) selectEntry(f settings.Field) *widget.SelectEntry {
	return d.inputs[f].(*widget.SelectEntry)
}
func (d *settingsDialog) check(f settings.Field) *widget.Check { return d.inputs[f].(*widget.Check) }
func (d *settingsDialog) selector(f settings.Field) *widget.Select {
	return d.inputs[f].(*widget.Select)
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
	if got := strings.Join(labels, ", "); got != "File/New conversation, File/Open folder, File/Connect a device…, File/Settings…, File/Quit, View/Group by folder, Help/About pilotdesk" {
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

// TestNotificationsForTurnEndsAndOff: a turn that ends while the window is
// in the background notifies; with notifications off nothing does; focus
// brings up the conversation of the latest notification.
func TestNotificationsForTurnEndsAndOff(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	lc := h.app.Lifecycle().(interface {
		OnEnteredForeground() func()
		OnExitedForeground() func()
	})
	h.send("show me markdown")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	first := h.w.current

	lc.OnExitedForeground()()
	h.loop.AssertNotificationSent(t, fyne.NewNotification("show me markdown", "The agent finished its turn."), func() {
		h.send("show me markdown again")
		h.waitFor("the second turn", func() bool { return statusRows(h) == 2 && h.hasStatus(protocol.StatusCompleted) })
	})
	// The user looked elsewhere meanwhile; focus comes back to the
	// conversation the notification was about.
	h.w.newConversation()
	lc.OnEnteredForeground()()
	if h.w.current != first {
		t.Fatal("focus did not bring up the notified conversation")
	}
	lc.OnEnteredForeground()() // once only
	if !h.w.notifier.focused || h.w.notifier.notifiedConv != "" {
		t.Fatal("focus state not updated")
	}

	h.app.Preferences().SetBool(settings.Lookup(settings.FieldNotifications).PrefKey(), false)
	lc.OnExitedForeground()()
	h.loop.AssertNotificationSent(t, nil, func() {
		h.send("approve the migration")
		h.waitModal(kindApproval)
		h.typeRunes("a")
		h.waitFor("the approved turn", func() bool { return !h.w.view.Streaming && h.hasStatus(protocol.StatusCompleted) })
	})
}

func TestAboutDialog(t *testing.T) {
	h := newHarness(t, harnessConfig{options: Options{Version: "1.2.3", Agent: "script"}})
	h.w.ShowAbout()
	if h.w.about == nil || len(h.w.Window().Canvas().Overlays().List()) == 0 {
		t.Fatal("no About dialog")
	}
	all := strings.Join(texts(aboutContent(aboutInfo{Version: "1.2.3", RelayURL: h.client.URL(), Agent: "script"})), "\n")
	for _, want := range []string{
		"Version 1.2.3",
		"embedded in this app, " + h.client.URL(),
		"built-in demo (scripted)",
		"Project site <" + ProjectURL + ">",
		"GitHub Copilot CLI <" + CopilotCLIURL + ">",
		"License <" + LicenseURL + ">",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("About lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, h.srv.Token) {
		t.Error("About shows the token")
	}
	remote := strings.Join(texts(aboutContent(aboutInfo{Version: "1.2.3", RelayURL: "wss://relay.example.com/ws", Remote: true})), "\n")
	if !strings.Contains(remote, "remote, wss://relay.example.com/ws") || !strings.Contains(remote, "chosen by the remote relay") {
		t.Errorf("remote About:\n%s", remote)
	}
}

// TestFirstRunNotice: the demo notice shows the reason and the install
// steps, opens Settings, and once dismissed stays dismissed.
func TestFirstRunNotice(t *testing.T) {
	reason := "No GitHub Copilot CLI was found on this computer."
	h := newHarness(t, harnessConfig{options: Options{DemoReason: reason}})
	n := h.w.notice
	if n == nil || n.id != firstRunNoticeID || !h.w.noticeSlot.Visible() {
		t.Fatal("no first-run notice")
	}
	body := strings.Join(texts(n.root), "\n")
	for _, want := range []string{FirstRunTitle, reason, "npm install -g @github/copilot", "copilot", "/login", "provider URL in Settings", "Use the demo", "Open Settings"} {
		if !strings.Contains(body, want) {
			t.Errorf("notice lacks %q:\n%s", want, body)
		}
	}
	tapButton(t, n.root, "Open Settings")
	if h.w.settings == nil {
		t.Fatal("Open Settings did not open the dialog")
	}
	h.w.settings.close()
	tapButton(t, n.root, "Use the demo")
	if h.w.notice != nil || h.w.noticeSlot.Visible() {
		t.Fatal("the notice stayed")
	}
	if !h.app.Preferences().Bool(prefFirstRunDismissed) {
		t.Fatal("the dismissal was not remembered")
	}

	// A window built later on the same app (the next start) does not
	// show it again.
	c, err := client.Config{URL: h.srv.URL, Token: h.srv.Token}.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	later := NewWindow(h.app, c, Options{DemoReason: reason})
	t.Cleanup(func() { later.Close(); c.Close(); later.Wait(); later.Window().Close() })
	if later.notice != nil {
		t.Fatal("the dismissed notice came back")
	}
	// Nor does the relay restarted by Settings: the window says that it
	// restarted, and why it still runs the demo; and it works on its new
	// relay.
	moveToRelay(t, h, nil, Options{DemoReason: reason})
	if n := h.w.notice; n == nil || n.id != relayNoticeID {
		t.Fatalf("after the restart: notice %+v, want the relay's", n)
	}
	if body := strings.Join(texts(h.w.notice.root), "\n"); !strings.Contains(body, "The embedded relay restarted") || !strings.Contains(body, reason) {
		t.Fatalf("relay notice:\n%s", body)
	}
	h.send("show me markdown")
	h.waitFor("the turn on the new relay", func() bool { return h.hasStatus(protocol.StatusCompleted) })
}

// TestFirstRunNoticeCompactOnceUsed: the first prompt sent to the demo
// turns its notice into one line, its title beside its buttons, and the
// conversation gets the room; the buttons still work.
func TestFirstRunNoticeCompactOnceUsed(t *testing.T) {
	reason := "No GitHub Copilot CLI was found on this computer."
	h := newHarness(t, harnessConfig{size: fyne.NewSize(1100, 720), options: Options{DemoReason: reason}})
	h.frame()
	n := h.w.notice
	if n == nil || n.id != firstRunNoticeID {
		t.Fatal("no first-run notice")
	}
	whole, list := h.w.noticeSlot.Size().Height, h.w.transcript.list.Size().Height
	if !h.drawn(n.body) {
		t.Fatal("the new notice does not show its body")
	}
	h.send("help")
	h.waitFor("the help turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	h.frame()
	if h.w.notice != n || !h.w.noticeSlot.Visible() {
		t.Fatal("sending a prompt dismissed the notice: it is dismissed by Use the demo")
	}
	if h.drawn(n.body) {
		t.Fatal("the body is still shown after a prompt to the demo")
	}
	compact := h.w.noticeSlot.Size().Height
	line := n.title.MinSize().Height + 6*theme.Padding()
	if compact > line || compact >= whole/2 {
		t.Fatalf("the notice is %v high after a prompt (whole: %v), want one line, at most %v", compact, whole, line)
	}
	if got := h.w.transcript.list.Size().Height; got < list+whole-compact-1 {
		t.Fatalf("the conversation is %v high, want %v: the room the notice gave up", got, list+whole-compact)
	}
	if body := strings.Join(texts(n.root), "\n"); !strings.Contains(body, FirstRunTitle) {
		t.Fatalf("the compact notice lacks its title:\n%s", body)
	}
	tapButton(t, n.root, "Open Settings")
	if h.w.settings == nil {
		t.Fatal("Open Settings did not open the dialog")
	}
	h.w.settings.close()
	tapButton(t, n.root, "Use the demo")
	if h.w.notice != nil || !h.app.Preferences().Bool(prefFirstRunDismissed) {
		t.Fatal("Use the demo did not dismiss the compact notice for good")
	}
}

// TestStartProblemNotice: the saved settings that did not start are named
// in a notice with a way to Settings.
func TestStartProblemNotice(t *testing.T) {
	h := newHarness(t, harnessConfig{options: Options{StartProblem: "pilotdesk could not start with your saved settings: boom.", DemoReason: "x"}})
	if h.w.notice == nil || h.w.notice.id != startNoticeID {
		t.Fatal("no start notice")
	}
	tapButton(t, h.w.notice.root, "Dismiss")
	if h.w.notice != nil {
		t.Fatal("not dismissed")
	}
	if h.app.Preferences().Bool(prefFirstRunDismissed) {
		t.Fatal("dismissing the start notice dismissed the first-run one")
	}
}

// TestSetClientMovesToNewRelay: the window moves to another relay in
// place (what applying settings does): the same Window and desktop window,
// the same conversation open, which the new relay does not have; an open
// Settings dialog stays with the window; it works there.
func TestSetClientMovesToNewRelay(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("show me markdown")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	w, oldWin, conv := h.w, h.w.Window(), h.w.current
	h.w.ShowAbout()
	h.w.ShowSettings()
	dlg := h.w.settings

	srv := moveToRelay(t, h, nil, Options{RelayName: "second relay"})
	if oldWin.Title() != "pilotdesk — second relay" {
		t.Fatalf("title %q", oldWin.Title())
	}
	if w.client.URL() != srv.URL {
		t.Fatalf("window on %s, want %s", w.client.URL(), srv.URL)
	}
	if w.current != conv || w.settings != dlg || w.about != nil {
		t.Fatalf("conversation %s (was %s), settings dialog %p (was %p), about %v", w.current, conv, w.settings, dlg, w.about)
	}
	h.waitFor("the conversation to be replayed from the new relay", func() bool { return h.w.view.Synced })
	if len(h.rows()) != 0 {
		t.Fatal("the old relay's conversation is still shown")
	}
	if w.notice == nil || w.notice.id != relayNoticeID {
		t.Fatal("the window does not say that the relay changed")
	}
	dlg.close()
	h.send("show me markdown")
	h.waitFor("the turn on the new relay", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	h.w.shortcut(shortcutSettings)
	if h.w.settings == nil {
		t.Fatal("the shortcuts do not work on the new relay")
	}
}

// TestSetClientKeepsTheConversation: a relay restarted on the same history
// (the embedded relay's data dir) replays the open conversation into the
// same window, which goes on with it there.
func TestSetClientKeepsTheConversation(t *testing.T) {
	store := history.NewMemory()
	h := newHarness(t, harnessConfig{relay: relay.Config{Store: store}})
	h.send("show me markdown")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	conv, rows, text := h.w.current, len(h.rows()), h.text()
	h.frame()
	title := h.w.title.Text

	h.srv.Close() // what restarting the embedded relay does first
	moveToRelay(t, h, store, Options{Agent: "script"})
	h.waitFor("the conversation replayed", func() bool { return h.w.view.Synced && len(h.rows()) == rows })
	if h.w.current != conv || h.text() != text || h.w.title.Text != title {
		t.Fatalf("conversation %s (was %s), title %q (was %q), text %q (was %q)", h.w.current, conv, h.w.title.Text, title, h.text(), text)
	}
	body := strings.Join(texts(h.w.notice.root), "\n")
	if !strings.Contains(body, "The embedded relay restarted") || !strings.Contains(body, "built-in demo (scripted)") {
		t.Fatalf("relay notice:\n%s", body)
	}
	h.send("show me markdown again")
	h.waitFor("the second turn, in the same conversation", func() bool { return statusRows(h) == 2 && h.hasStatus(protocol.StatusCompleted) })
	if h.w.current != conv {
		t.Fatal("the prompt went to another conversation")
	}
}

// moveToRelay starts another relay playing the test script, on store if
// not nil, and moves h's window to it with opts (SetClient); h then drives
// the window on the new client.
func moveToRelay(t *testing.T, h *harness, store history.Store, opts Options) *relaytest.Server {
	t.Helper()
	s, err := script.Parse("testdata/script.json", testScript)
	if err != nil {
		t.Fatal(err)
	}
	srv := relaytest.Start(t, relay.Config{Agent: script.New(s), Token: "second-token", Store: store})
	ctx, cancel := context.WithCancel(context.Background())
	c, err := client.Config{URL: srv.URL, Token: srv.Token}.Dial(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	old := h.client
	h.w.SetClient(c, opts)
	old.Close()
	t.Cleanup(func() {
		c.Close()
		cancel()
	})
	h.client = c
	h.waitFor("the new connection to go live", func() bool { return h.w.store.State().State == client.StateLive })
	return srv
}

// tapButton taps the button labelled text under o: a plain button, or a
// transcript row's.
func tapButton(t *testing.T, o fyne.CanvasObject, text string) {
	t.Helper()
	var found fyne.Tappable
	uitest.Walk(o, func(o fyne.CanvasObject) bool {
		switch b := o.(type) {
		case *widget.Button:
			if b.Text == text {
				found = b
			}
		case *rowButton:
			if b.Text == text {
				found = b
			}
		}
		return true
	})
	if found == nil {
		t.Fatalf("no %q button", text)
	}
	test.Tap(found)
}

func statusRows(h *harness) int {
	n := 0
	for _, r := range h.rows() {
		if r.Kind == conversation.RowStatus {
			n++
		}
	}
	return n
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
