package ui

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session/script"
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

func TestInputTimeoutText(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"5m", 5 * time.Minute, ""},
		{" 90s ", 90 * time.Second, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"never", 0, ""},
		{"Never", 0, ""},
		{"0", 0, ""},
		{"soon", 0, `"soon" is not a duration: write it like 90s, 5m or 1h, or never`},
		{"5", 0, `"5" is not a duration`},
		{"-3m", 0, `"-3m" must be longer than zero, or never`},
	} {
		got, err := ParseInputTimeout(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseInputTimeout(%q) error %v, want %q", c.in, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseInputTimeout(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for d, want := range map[time.Duration]string{5 * time.Minute: "5m", 90 * time.Second: "1m30s", 2 * time.Hour: "2h", 0: "never"} {
		if got := FormatInputTimeout(d); got != want {
			t.Errorf("FormatInputTimeout(%v) = %q, want %q", d, got, want)
		}
		back, err := ParseInputTimeout(FormatInputTimeout(d))
		if err != nil || back != d {
			t.Errorf("round trip of %v: %v, %v", d, back, err)
		}
	}
}

func TestValidateMessages(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := DefaultSettings()
	for _, c := range []struct {
		name  string
		edit  func(*Settings)
		field SettingField
		msg   string
	}{
		{"remote without address", func(s *Settings) { s.Remote = true }, FieldRemoteURL, "Enter the relay's address, such as ws://host:7420/ws"},
		{"remote http", func(s *Settings) { s.Remote, s.RemoteURL = true, "http://host:7420/ws" }, FieldRemoteURL, `"http://host:7420/ws" is not a relay address: use ws://host:7420/ws or wss://host/ws`},
		{"remote no host", func(s *Settings) { s.Remote, s.RemoteURL = true, "ws:///ws" }, FieldRemoteURL, "is not a relay address"},
		{"provider ftp", func(s *Settings) { s.ProviderURL = "ftp://x/v1" }, FieldProviderURL, `"ftp://x/v1" is not a provider URL: use http(s)://host:port/v1`},
		{"missing dir", func(s *Settings) { s.WorkDir = filepath.Join(dir, "nope") }, FieldWorkDir, `The folder "` + filepath.Join(dir, "nope") + `" does not exist`},
		{"file as dir", func(s *Settings) { s.WorkDir = file }, FieldWorkDir, "is a file, not a folder"},
		{"copilot missing", func(s *Settings) { s.CopilotPath = filepath.Join(dir, "copilot") }, FieldCopilotPath, "No Copilot CLI at"},
		{"agent", func(s *Settings) { s.Agent = "gpt" }, FieldAgent, `Unknown agent "gpt"`},
		{"negative timeout", func(s *Settings) { s.InputTimeout = -time.Second }, FieldInputTimeout, "must be longer than zero"},
	} {
		s := base
		c.edit(&s)
		errs := s.Validate()
		if len(errs) != 1 || errs[0].Field != c.field || !strings.Contains(errs[0].Message, c.msg) {
			t.Errorf("%s: %+v, want one error on %s containing %q", c.name, errs, c.field, c.msg)
		}
	}
	ok := base
	ok.Remote, ok.RemoteURL, ok.WorkDir, ok.ProviderURL = true, "wss://relay.example.com/ws", dir, "http://127.0.0.1:8080/v1"
	if errs := ok.Validate(); len(errs) != 0 {
		t.Errorf("valid settings refused: %v", errs)
	}
}

func TestNeedsRestart(t *testing.T) {
	base := DefaultSettings()
	remote := base
	remote.Remote, remote.RemoteURL = true, "ws://a/ws"
	for _, c := range []struct {
		name      string
		old, edit func(*Settings)
		want      bool
	}{
		{"model only", nil, func(s *Settings) { s.Model = "gpt-5" }, false},
		{"notifications only", nil, func(s *Settings) { s.Notifications = false }, false},
		{"agent", nil, func(s *Settings) { s.Agent = AgentDemo }, true},
		{"workdir", nil, func(s *Settings) { s.WorkDir = "/tmp" }, true},
		{"key", nil, func(s *Settings) { s.ProviderKey = "k" }, true},
		{"timeout", nil, func(s *Settings) { s.InputTimeout = 0 }, true},
		{"to remote", nil, func(s *Settings) { s.Remote, s.RemoteURL = true, "ws://a/ws" }, true},
		{"remote address unused when embedded", nil, func(s *Settings) { s.RemoteURL = "ws://b/ws" }, false},
		{"remote: agent unused", func(s *Settings) { *s = remote }, func(s *Settings) { *s = remote; s.Agent = AgentDemo }, false},
		{"remote: new token", func(s *Settings) { *s = remote }, func(s *Settings) { *s = remote; s.RemoteToken = "t" }, true},
	} {
		old, s := base, base
		if c.old != nil {
			c.old(&old)
		}
		c.edit(&s)
		if got := needsRestart(old, s); got != c.want {
			t.Errorf("%s: needsRestart = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSecretsNeverPrinted: the key and the token are masked in slog and
// fmt output of Settings.
func TestSecretsNeverPrinted(t *testing.T) {
	s := DefaultSettings()
	s.ProviderKey, s.RemoteToken = "sk-live-SECRET-1", "tok-SECRET-2"
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	logger.Info("settings", "settings", s)
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("settings", "settings", s)
	for _, out := range []string{buf.String(), s.String(), s.GoString()} {
		if strings.Contains(out, "SECRET") {
			t.Fatalf("a secret leaked: %s", out)
		}
		if !strings.Contains(out, "********") {
			t.Fatalf("no masked value in %s", out)
		}
	}
}

// TestSettingsPersistInPreferences: what SaveSettings writes, LoadSettings
// reads back; missing values come from the defaults.
func TestSettingsPersistInPreferences(t *testing.T) {
	a := test.NewTempApp(t)
	def := DefaultSettings()
	if got := LoadSettings(a.Preferences(), def); got != def {
		t.Fatalf("empty preferences: %+v, want the defaults", got)
	}
	s := Settings{Agent: AgentCopilot, CopilotPath: "/opt/copilot", Model: "gpt-5", ProviderURL: "http://127.0.0.1:8080/v1",
		ProviderType: "azure", ProviderKey: "k", WorkDir: "/src", InputTimeout: 0, Notifications: false,
		Remote: true, RemoteURL: "wss://relay/ws", RemoteToken: "t"}
	SaveSettings(a.Preferences(), s)
	if got := LoadSettings(a.Preferences(), def); got != s {
		t.Fatalf("read back %+v, want %+v", got, s)
	}
	// Preferences without a batch write get one call per key.
	s.Model, s.Remote, s.InputTimeout = "other", false, time.Hour
	SaveSettings(struct{ fyne.Preferences }{a.Preferences()}, s)
	if got := LoadSettings(a.Preferences(), def); got != s {
		t.Fatalf("read back %+v, want %+v", got, s)
	}
	// A value the user could not have typed falls back to the default.
	a.Preferences().SetString(prefKey(FieldInputTimeout), "soon")
	if got := LoadSettings(a.Preferences(), def).InputTimeout; got != def.InputTimeout {
		t.Fatalf("bad stored timeout read as %v", got)
	}
}

// ---- the window ----

// texts returns the text of every label, hyperlink, entry and rich text
// under o, in order.
func texts(o fyne.CanvasObject) []string {
	var out []string
	var walk func(fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *widget.Label:
			out = append(out, x.Text)
			return
		case *widget.Hyperlink:
			out = append(out, x.Text+" <"+x.URL.String()+">")
			return
		case *widget.RichText:
			out = append(out, x.String())
			return
		case *widget.Entry:
			out = append(out, x.Text)
			return
		case *fyne.Container:
			for _, c := range x.Objects {
				walk(c)
			}
			return
		case fyne.Widget:
			for _, c := range test.WidgetRenderer(x).Objects() {
				walk(c)
			}
		}
	}
	walk(o)
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
	if got := strings.Join(labels, ", "); got != "File/New conversation, File/Settings…, File/Quit, Help/About pilotdesk" {
		t.Fatalf("menu %s", got)
	}
	menu.Items[1].Items[0].Action()
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
	d.connection.SetSelected(connRemote)
	d.remoteURL.SetText("http://relay.example.com")
	d.workDir.SetText(filepath.Join(t.TempDir(), "missing"))
	d.inputTimeout.SetText("soon")
	d.model.SetText("gpt-5")
	test.Tap(d.apply)

	want := map[SettingField]string{
		FieldRemoteURL:    `"http://relay.example.com" is not a relay address: use ws://host:7420/ws or wss://host/ws`,
		FieldWorkDir:      "does not exist",
		FieldInputTimeout: `Input timeout "soon" is not a duration: write it like 90s, 5m or 1h, or never`,
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
	if got := LoadSettings(h.app.Preferences(), DefaultSettings()); got != DefaultSettings() {
		t.Errorf("saved despite the errors: %+v", got)
	}
	if h.w.opts.Model != "" {
		t.Errorf("model applied despite the errors")
	}
	// Fixed: the errors go and the settings are saved.
	d.remoteURL.SetText("ws://relay.example.com:7420/ws")
	d.workDir.SetText(t.TempDir())
	d.inputTimeout.SetText("never")
	test.Tap(d.apply)
	for f, l := range d.errs {
		if l.Visible() {
			t.Errorf("%s still shows %q", f, l.Text)
		}
	}
	got := LoadSettings(h.app.Preferences(), DefaultSettings())
	if !got.Remote || got.RemoteURL != "ws://relay.example.com:7420/ws" || got.InputTimeout != 0 || got.Model != "gpt-5" {
		t.Errorf("saved %+v", got)
	}
	// No Restart hook: saved for the next start, and the dialog says so.
	if d.status.Text != settingsSavedNoHost {
		t.Errorf("status %q", d.status.Text)
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
	d.model.SetText("gpt-5")
	d.notifications.SetChecked(false)
	test.Tap(d.apply)
	if restarts != 0 || h.w.settings != nil {
		t.Fatalf("model and notifications: %d restarts, dialog open %v", restarts, h.w.settings != nil)
	}
	if h.w.opts.Model != "gpt-5" || h.w.notificationsOn() {
		t.Fatalf("not applied at once: model %q, notifications %v", h.w.opts.Model, h.w.notificationsOn())
	}

	h.w.ShowSettings()
	d = h.w.settings
	if d.model.Text != "gpt-5" || d.notifications.Checked {
		t.Fatalf("the dialog does not show the saved values: %q %v", d.model.Text, d.notifications.Checked)
	}
	if d.providerKey.Password != true {
		t.Fatal("the provider key is not a password entry")
	}
	d.providerKey.SetText("sk-live-TOPSECRET")
	d.agent.SetSelected(agentLabel(AgentDemo))
	fail = errors.New("the Copilot agent cannot start")
	test.Tap(d.apply)
	if restarts != 1 || h.w.settings == nil {
		t.Fatalf("restarts %d, dialog open %v", restarts, h.w.settings != nil)
	}
	if !strings.HasPrefix(d.status.Text, "Not applied: the Copilot agent cannot start.") {
		t.Fatalf("status %q", d.status.Text)
	}
	if got := LoadSettings(h.app.Preferences(), DefaultSettings()); got.ProviderKey != "" || got.Agent != AgentAuto {
		t.Fatalf("a failed restart left the new preferences: %+v", got)
	}
	fail = nil
	test.Tap(d.apply)
	if restarts != 2 || h.w.settings != nil {
		t.Fatalf("restarts %d, dialog open %v", restarts, h.w.settings != nil)
	}
	if got := LoadSettings(h.app.Preferences(), DefaultSettings()); got.ProviderKey != "sk-live-TOPSECRET" || got.Agent != AgentDemo {
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
	eff := DefaultSettings()
	eff.Model = "from-flag"
	h := newHarness(t, harnessConfig{options: Options{Effective: eff, Locked: map[SettingField]string{FieldModel: "--model"}, Model: "from-flag"}})
	SaveSettings(h.app.Preferences(), Settings{Agent: AgentAuto, ProviderType: "openai", InputTimeout: time.Minute, Model: "saved-model", Notifications: true})
	h.w.ShowSettings()
	d := h.w.settings
	if d.model.Text != "from-flag" || !d.model.Disabled() {
		t.Fatalf("model entry %q disabled %v", d.model.Text, d.model.Disabled())
	}
	if hint := d.items[FieldModel].HintText; hint != "Set by --model for this run" {
		t.Fatalf("hint %q", hint)
	}
	d.inputTimeout.SetText("2m")
	test.Tap(d.apply)
	got := LoadSettings(h.app.Preferences(), DefaultSettings())
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
	test.AssertNotificationSent(t, fyne.NewNotification("pilotdesk: the agent finished", "show me markdown"), func() {
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
	if !h.w.focused || h.w.notifiedConv != "" {
		t.Fatal("focus state not updated")
	}

	h.app.Preferences().SetBool(prefKey(FieldNotifications), false)
	lc.OnExitedForeground()()
	test.AssertNotificationSent(t, nil, func() {
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

	// A window built later on the same app (the relay restarted) does not
	// show it again, and works on its new relay.
	nw, _ := replaceRelay(t, h, Options{DemoReason: reason})
	if nw.notice != nil {
		t.Fatal("the dismissed notice came back")
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

// TestReplaceMovesToNewRelay: the window moves to another relay in place
// (what applying settings does) and works there.
func TestReplaceMovesToNewRelay(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("show me markdown")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	oldWin := h.w.Window()
	h.w.ShowAbout()

	nw, srv := replaceRelay(t, h, Options{RelayName: "second relay"})
	if nw.Window() != oldWin || oldWin.Title() != "pilotdesk — second relay" {
		t.Fatalf("not the same desktop window, or title %q", oldWin.Title())
	}
	if nw.client.URL() != srv.URL {
		t.Fatalf("window on %s, want %s", nw.client.URL(), srv.URL)
	}
	if len(h.rows()) != 0 {
		t.Fatal("the old relay's conversation is still shown")
	}
	h.send("show me markdown")
	h.waitFor("the turn on the new relay", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	h.w.shortcut(shortcutSettings)
	if h.w.settings == nil {
		t.Fatal("the new window's shortcuts do not work")
	}
}

// replaceRelay starts a second relay and moves h's window to it; h then
// drives the new window.
func replaceRelay(t *testing.T, h *harness, opts Options) (*Window, *relaytest.Server) {
	t.Helper()
	s, err := script.Parse("testdata/script.json", testScript)
	if err != nil {
		t.Fatal(err)
	}
	srv := relaytest.Start(t, relay.Config{Agent: script.New(s), Token: "second-token"})
	ctx, cancel := context.WithCancel(context.Background())
	c, err := client.Config{URL: srv.URL, Token: srv.Token}.Dial(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	opts.Manual = true
	old, oldClient := h.w, h.client
	nw := old.Replace(c, opts)
	oldClient.Close()
	old.Wait()
	t.Cleanup(func() {
		nw.Close()
		c.Close()
		cancel()
		nw.Wait()
	})
	h.w, h.client = nw, c
	h.waitFor("the new connection to go live", func() bool { return nw.store.State().State == client.StateLive })
	return nw, srv
}

// tapButton taps the button labelled text under o.
func tapButton(t *testing.T, o fyne.CanvasObject, text string) {
	t.Helper()
	var found *widget.Button
	var walk func(fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *widget.Button:
			if x.Text == text {
				found = x
			}
		case *fyne.Container:
			for _, c := range x.Objects {
				walk(c)
			}
		case fyne.Widget:
			for _, c := range test.WidgetRenderer(x).Objects() {
				walk(c)
			}
		}
	}
	walk(o)
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
