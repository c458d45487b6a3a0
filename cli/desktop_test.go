package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"io"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/settings"
	"github.com/pilotdesk/pilotdesk/ui/uitest"
)

// parseWindowFlags parses the window's command line as runWindow does.
func parseWindowFlags(t *testing.T, env map[string]string, args ...string) (clientFlags, *flag.FlagSet, func(string) string) {
	t.Helper()
	getenv := func(k string) string { return env[k] }
	fs := flag.NewFlagSet("pilotdesk", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs, getenv)
	if err := parseFlags(fs, args, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if err := cf.validate(fromCommandLine); err != nil {
		t.Fatal(err)
	}
	return cf, fs, getenv
}

// TestSettingsPrecedence: flags given on the command line (and their
// environment variables) win over the saved settings, which win over the
// defaults.
func TestSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	saved := settings.Defaults()
	saved.Agent = settings.AgentDemo
	saved.Model = "saved-model"
	saved.InputTimeout = 2 * time.Minute
	saved.ProviderKey = "saved-key"
	saved.WorkDir = dir
	remote := saved
	remote.Remote, remote.RemoteURL, remote.RemoteToken = true, "ws://saved.example.com/ws", "saved-token"

	for _, c := range []struct {
		name   string
		env    map[string]string
		args   []string
		saved  *settings.Settings
		check  func(t *testing.T, got clientFlags)
		locked map[settings.Field]string
	}{
		{
			name: "defaults", args: []string{"--data-dir", memoryDataDir},
			check: func(t *testing.T, got clientFlags) {
				if got.relay.Agent != "auto" || got.relay.Model != "" || got.relay.InputTimeout != 5*time.Minute || got.relay.Remote {
					t.Errorf("%+v", got)
				}
			},
			locked: map[settings.Field]string{},
		},
		{
			name: "preferences over defaults", args: []string{"--data-dir", memoryDataDir}, saved: &saved,
			check: func(t *testing.T, got clientFlags) {
				r := got.relay
				if r.Agent != "script" || r.Model != "saved-model" || r.InputTimeout != 2*time.Minute || r.ProviderKey != "saved-key" || r.WorkDir != dir {
					t.Errorf("%+v", r)
				}
			},
			locked: map[settings.Field]string{},
		},
		{
			name: "flags over preferences", saved: &saved,
			args: []string{"--data-dir", memoryDataDir, "--model", "flag-model", "--input-timeout", "0", "--agent", "auto"},
			check: func(t *testing.T, got clientFlags) {
				r := got.relay
				if r.Agent != "auto" || r.Model != "flag-model" || r.InputTimeout != 0 || r.ProviderKey != "saved-key" {
					t.Errorf("%+v", r)
				}
			},
			locked: map[settings.Field]string{settings.FieldModel: "--model", settings.FieldInputTimeout: "--input-timeout", settings.FieldAgent: "--agent"},
		},
		{
			name: "environment over preferences", saved: &saved, env: map[string]string{"PILOTDESK_PROVIDER_KEY": "env-key"},
			args: []string{"--data-dir", memoryDataDir},
			check: func(t *testing.T, got clientFlags) {
				if got.relay.ProviderKey != "env-key" || got.relay.Model != "saved-model" {
					t.Errorf("%+v", got.relay)
				}
			},
			locked: map[settings.Field]string{settings.FieldProviderKey: "PILOTDESK_PROVIDER_KEY"},
		},
		{
			name: "flag over its environment variable", env: map[string]string{"PILOTDESK_PROVIDER_KEY": "env-key"},
			args: []string{"--data-dir", memoryDataDir, "--provider-key", "flag-key"},
			check: func(t *testing.T, got clientFlags) {
				if got.relay.ProviderKey != "flag-key" {
					t.Errorf("%+v", got.relay)
				}
			},
			locked: map[settings.Field]string{settings.FieldProviderKey: "--provider-key"},
		},
		{
			name: "saved remote relay", saved: &remote, args: []string{"--data-dir", memoryDataDir},
			check: func(t *testing.T, got clientFlags) {
				if !got.relay.Remote || got.relay.RemoteURL != "ws://saved.example.com/ws" || got.relay.RemoteToken != "saved-token" {
					t.Errorf("remote %v %q token %q", got.relay.Remote, got.relay.RemoteURL, got.relay.RemoteToken)
				}
			},
			locked: map[settings.Field]string{},
		},
		{
			name: "--connect over the saved relay", saved: &remote,
			args: []string{"--data-dir", memoryDataDir, "--connect", "wss://flag.example.com/ws"},
			check: func(t *testing.T, got clientFlags) {
				if !got.relay.Remote || got.relay.RemoteURL != "wss://flag.example.com/ws" || got.relay.RemoteToken != "" {
					t.Errorf("remote %v %q token %q: the saved token must not go to another relay", got.relay.Remote, got.relay.RemoteURL, got.relay.RemoteToken)
				}
			},
			locked: map[settings.Field]string{settings.FieldRemote: "--connect", settings.FieldRemoteURL: "--connect", settings.FieldRemoteToken: "--connect"},
		},
		{
			name: "--script fixes the agent", saved: &saved,
			args: []string{"--data-dir", memoryDataDir, "--script", filepath.Join("..", "ui", "testdata", "script.json")},
			check: func(t *testing.T, got clientFlags) {
				if got.relay.Agent != "auto" || got.relay.Script == "" {
					t.Errorf("%+v", got.relay)
				}
				if s := effectiveSettings(got); s.Agent != settings.AgentDemo {
					t.Errorf("effective agent %q", s.Agent)
				}
			},
			locked: map[settings.Field]string{settings.FieldAgent: "--script"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			cf, fs, getenv := parseWindowFlags(t, c.env, c.args...)
			locked := settings.Locked(fs, getenv)
			if len(locked) != len(c.locked) {
				t.Errorf("locked %v, want %v", locked, c.locked)
			}
			for f, by := range c.locked {
				if locked[f] != by {
					t.Errorf("locked[%s] = %q, want %q", f, locked[f], by)
				}
			}
			p := settings.Defaults()
			if c.saved != nil {
				p = *c.saved
			}
			got, err := withPrefs(cf, locked, p)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, got)
		})
	}

	// A saved folder that has gone is an error, not a silent default.
	gone := saved
	gone.WorkDir = filepath.Join(dir, "gone")
	cf, fs, getenv := parseWindowFlags(t, nil, "--data-dir", memoryDataDir)
	if _, err := withPrefs(cf, settings.Locked(fs, getenv), gone); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("err %v", err)
	}
}

// newPrefsApp returns an app whose preferences live in a file, as the real
// app's do (the ci build tag gives it the headless driver). Apps with the
// same id share the file.
func newPrefsApp(t *testing.T, id string) fyne.App {
	t.Helper()
	// app.NewWithID makes the new app the current one, and the test
	// driver's fyne.Do runs its function at once on the calling goroutine:
	// a window an earlier desktop of the same test still shows would then
	// draw from its timers' goroutines, racing the test's. The current app
	// stays the wrapped one (uitest.Wrap: fyne.Do queued for the test's
	// goroutine) until a desktop wraps this app in turn.
	prev := fyne.CurrentApp()
	a := app.NewWithID(id)
	if prev != nil {
		fyne.SetCurrentApp(prev)
	}
	t.Cleanup(func() {
		// The preferences are in os.TempDir()/fyne-test/<id> under -tags ci.
		os.RemoveAll(filepath.Join(os.TempDir(), "fyne-test", id))
	})
	return a
}

func testAppID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "io.github.pilotdesk.test-" + hex.EncodeToString(b[:])
}

// stopApp does what the driver does when the app exits: the stopped hooks
// run and the preferences are written.
func stopApp(a fyne.App) {
	if f := a.Lifecycle().(interface{ OnStopped() func() }).OnStopped(); f != nil {
		f()
	}
}

// TestSettingsPersistAcrossRestart: settings saved in one run of the app
// are read back by the next one.
func TestSettingsPersistAcrossRestart(t *testing.T) {
	id := testAppID()
	a := newPrefsApp(t, id)
	s := settings.Settings{Agent: settings.AgentCopilot, CopilotPath: "/opt/copilot/copilot", Model: "gpt-5", ProviderURL: "http://127.0.0.1:8080/v1",
		ProviderType: "anthropic", ProviderKey: "k-123", WorkDir: t.TempDir(), InputTimeout: 90 * time.Second, Notifications: false,
		Remote: true, RemoteURL: "wss://relay.example.com/ws", RemoteToken: "t-456", BudgetCredits: 25.5, BudgetPeriod: 48 * time.Hour}
	settings.Save(a.Preferences(), s)
	stopApp(a)

	if _, err := os.Stat(filepath.Join(os.TempDir(), "fyne-test", id, "preferences.json")); err != nil {
		t.Fatalf("no preferences file: %v", err)
	}
	again := newPrefsApp(t, id)
	if got := settings.Load(again.Preferences(), settings.Defaults()); got != s {
		t.Fatalf("after a restart: %+v\nwant %+v", got, s)
	}
	other := newPrefsApp(t, testAppID())
	if got := settings.Load(other.Preferences(), settings.Defaults()); got != settings.Defaults() {
		t.Fatalf("another app id sees %+v", got)
	}
}

// testDesktop is a desktop on the headless driver whose UI work runs on
// the test's goroutine.
type testDesktop struct {
	t    *testing.T
	d    *desktop
	app  fyne.App
	logs *testsupport.Buffer
	loop *uitest.Loop // the UI goroutine's queue: the test runs it
}

func openTestDesktop(t *testing.T, a fyne.App, args ...string) (*testDesktop, error) {
	t.Helper()
	td, err := startTestDesktop(t, a, args...)
	if err != nil {
		return nil, err
	}
	// The window is up before its relay: wait for the relay (a start may
	// probe the Copilot CLI).
	td.waitStarted()
	if td.d.cur == nil {
		return td, td.d.failed()
	}
	return td, nil
}

// waitStarted waits until the window's first relay runs or failed to.
func (td *testDesktop) waitStarted() {
	td.t.Helper()
	td.loop.WaitFor(td.t, 60*time.Second, "the relay's start", func() bool { return !td.d.restarting }, nil)
}

// startTestDesktop builds the window and returns while its relay starts.
func startTestDesktop(t *testing.T, a fyne.App, args ...string) (*testDesktop, error) {
	t.Helper()
	cf, fs, getenv := parseWindowFlags(t, nil, args...)
	logs := &testsupport.Buffer{}
	a, loop := uitest.Wrap(t, a)
	td := &testDesktop{t: t, app: a, logs: logs, loop: loop}
	d, err := openDesktop(context.Background(), desktopConfig{
		app:    a,
		flags:  cf,
		locked: settings.Locked(fs, getenv),
		logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		return nil, err
	}
	td.d = d
	d.win.Window().Show()
	d.startRelay()
	t.Cleanup(func() {
		d.close()
		d.win.Window().Close()
	})
	return td, nil
}

// restart applies the saved settings as the dialog does and waits for done.
func (td *testDesktop) restart() error {
	td.t.Helper()
	result := make(chan error, 1)
	td.d.restart(func(err error) { result <- err })
	var err error
	// A start may probe the Copilot CLI: allow it time.
	td.loop.WaitFor(td.t, 60*time.Second, "the restart", func() bool {
		select {
		case err = <-result:
			return true
		default:
			return false
		}
	}, nil)
	return err
}

// applyRestarts saves s as the Settings dialog does, applies them, and
// returns the relay they started: the test fails unless the restart
// succeeded and replaced the relay with another (an embedded relay on a
// data dir keeps its address).
func (td *testDesktop) applyRestarts(s settings.Settings) *relayConn {
	td.t.Helper()
	before := td.d.cur
	settings.Save(td.app.Preferences(), s)
	if err := td.restart(); err != nil {
		td.t.Fatalf("restart: %v", err)
	}
	after := td.d.cur
	if after == nil || after == before || (before != nil && after.target.relay == before.target.relay && after.target.URL == before.target.URL) {
		td.t.Fatal("the relay was not restarted")
	}
	return after
}

// prompt types a prompt into the window's composer and presses Enter.
func (td *testDesktop) prompt(text string) {
	td.t.Helper()
	td.loop.Drain()
	c := td.d.win.Window().Canvas()
	f := c.Focused()
	if f == nil {
		td.t.Fatal("nothing has the keyboard: the composer should")
	}
	for _, r := range text {
		f.TypedRune(r)
	}
	f.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
}

// dialOwner connects a client of the caller's own to the relay r with its
// owner token. The returned context bounds the caller's wait to
// relaytest.Timeout; done closes the client and ends that context: one
// client and one deadline per wait, so a wait that loops over another
// (waitPrompt over waitConversation) does not keep the inner one's
// clients open.
func dialOwner(t *testing.T, r *relayConn) (context.Context, *client.Client, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), relaytest.Timeout)
	c, err := client.Config{URL: r.target.URL, Token: r.target.Token}.Dial(ctx)
	if err != nil {
		cancel()
		t.Fatalf("dial the relay at %s: %v", r.target.URL, err)
	}
	return ctx, c, func() { c.Close(); cancel() }
}

// waitConversation waits until the relay at url lists a finished
// conversation titled title, asking with a client of its own.
func waitConversation(t *testing.T, r *relayConn, title string) {
	t.Helper()
	ctx, c, done := dialOwner(t, r)
	defer done()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := c.List(ctx); err != nil {
			t.Fatal(err)
		}
	read:
		for {
			select {
			case ev := <-c.Events():
				if l, ok := ev.Data.(*protocol.Conversations); ok {
					for _, info := range l.Conversations {
						if info.Title == title && !info.Streaming {
							return
						}
					}
					break read
				}
			case <-ctx.Done():
				t.Fatalf("the relay at %s never listed a finished %q", r.target.URL, title)
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("the relay at %s never listed a finished %q", r.target.URL, title)
		}
	}
}

// waitPrompt waits until the relay r has run prompt to its end in the
// conversation titled title, asking with a client of its own.
func waitPrompt(t *testing.T, r *relayConn, title, prompt string) {
	t.Helper()
	ctx, c, done := dialOwner(t, r)
	defer done()
	for {
		waitConversation(t, r, title)
		if err := c.List(ctx); err != nil {
			t.Fatal(err)
		}
		id := ""
		for id == "" {
			select {
			case ev := <-c.Events():
				if l, ok := ev.Data.(*protocol.Conversations); ok {
					for _, info := range l.Conversations {
						if info.Title == title {
							id = info.ConversationID
						}
					}
					if id == "" {
						t.Fatalf("the relay at %s lists no %q", r.target.URL, title)
					}
				}
			case <-ctx.Done():
				t.Fatalf("the relay at %s did not list its conversations", r.target.URL)
			}
		}
		// The history, up to copilot:subscribed: was prompt sent, and is
		// its turn over?
		if err := c.Subscribe(ctx, id, 0); err != nil {
			t.Fatal(err)
		}
		sent, done := false, false
	replay:
		for {
			select {
			case ev := <-c.Events():
				switch d := ev.Data.(type) {
				case *protocol.UserMessage:
					sent = sent || d.Content == prompt
				case *protocol.Subscribed:
					done = !d.Streaming
					break replay
				}
			case <-ctx.Done():
				t.Fatalf("the relay at %s never ran %q in %q", r.target.URL, prompt, title)
			}
		}
		if sent && done {
			return
		}
		if err := c.Unsubscribe(ctx, id); err != nil {
			t.Fatal(err)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("the relay at %s never ran %q in %q", r.target.URL, prompt, title)
		}
	}
}

// TestApplyingSettingsRestartsTheEmbeddedRelay: applying new agent
// settings stops the embedded relay, starts one with them, and the same
// window goes on on the new relay, in the conversation it had open: the
// history is kept. Settings that cannot start put the previous relay back.
// The provider key is never logged.
func TestApplyingSettingsRestartsTheEmbeddedRelay(t *testing.T) {
	a := newPrefsApp(t, testAppID())
	start := settings.Defaults()
	start.Agent = settings.AgentDemo
	settings.Save(a.Preferences(), start)
	td, err := openTestDesktop(t, a, "--data-dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first, win := td.d.cur, td.d.win
	if !first.target.Embedded || first.target.Agent != "script" || first.flags.relay.InputTimeout != 5*time.Minute {
		t.Fatalf("first relay %+v", first.target)
	}
	td.prompt("markdown from the first relay")
	waitConversation(t, first, "markdown from the first relay")

	const secret = "sk-live-NEVER-IN-LOGS-42"
	next := start
	next.InputTimeout = 2 * time.Minute
	next.ProviderKey = secret
	next.BudgetCredits, next.BudgetPeriod = 50, 168*time.Hour
	second := td.applyRestarts(next)
	if second.flags.relay.InputTimeout != 2*time.Minute || second.flags.relay.ProviderKey != secret {
		t.Fatalf("the new relay does not run the new settings: %+v", second.flags.relay)
	}
	// The budget of the Settings reaches the new relay, which tells its
	// clients.
	var budget protocol.Budget
	relaytest.Dial(t, second.target.URL, second.target.Token).Expect(protocol.TypeBudget).Decode(t, &budget)
	if budget.BudgetCredits != 50 || budget.PeriodSeconds != int64(168*time.Hour/time.Second) {
		t.Fatalf("the new relay's budget: %+v", budget)
	}
	if got := td.d.win.Window().Title(); !strings.Contains(got, "embedded relay") {
		t.Fatalf("title %q", got)
	}
	if td.d.win != win {
		t.Fatal("the window was replaced")
	}
	if second.target.URL != first.target.URL {
		t.Fatalf("the relay moved from %s to %s", first.target.URL, second.target.URL)
	}
	// The window works on the new relay, which kept the history, in the
	// conversation it had open.
	td.prompt("markdown from the second relay")
	waitPrompt(t, second, "markdown from the first relay", "markdown from the second relay")

	// Settings that cannot start: the previous relay comes back.
	bad := next
	bad.Agent = settings.AgentCopilot
	bad.CopilotPath = filepath.Join(t.TempDir(), "copilot")
	settings.Save(a.Preferences(), bad)
	err = td.restart()
	if err == nil || !strings.Contains(err.Error(), "the Copilot agent cannot start") {
		t.Fatalf("restart with a missing Copilot CLI: %v", err)
	}
	third := td.d.cur
	if third == second || third.flags != second.flags {
		t.Fatalf("not back on the previous settings: %+v", third.flags.relay)
	}
	td.prompt("markdown after going back")
	waitPrompt(t, third, "markdown from the first relay", "markdown after going back")

	logs := td.logs.String()
	if strings.Contains(logs, secret) {
		t.Fatalf("the provider key is in the log:\n%s", logs)
	}
	if !strings.Contains(logs, "providerKey=********") {
		t.Fatalf("the settings in use were not logged:\n%s", logs)
	}
}

// TestFirstRunPicksTheDemo: with no Copilot CLI, auto runs the demo and the
// window is told why.
func TestFirstRunPicksTheDemo(t *testing.T) {
	a := newPrefsApp(t, testAppID())
	missing := filepath.Join(t.TempDir(), "copilot")
	td, err := openTestDesktop(t, a, "--data-dir", memoryDataDir, "--copilot-path", missing)
	if err != nil {
		t.Fatal(err)
	}
	tg := td.d.cur.target
	if tg.Agent != "script" || tg.DemoReason != "No GitHub Copilot CLI was found at "+missing+"." {
		t.Fatalf("agent %q, reason %q", tg.Agent, tg.DemoReason)
	}
	if opts := td.d.options(td.d.cur, ""); opts.DemoReason != tg.DemoReason || opts.Agent != "script" || opts.Version != Version {
		t.Fatalf("window options %+v", opts)
	}
}

// TestSavedSettingsThatFailFallBack: saved settings that do not start
// leave the app usable on the defaults; the command line's own failing
// settings are an error as before.
func TestSavedSettingsThatFailFallBack(t *testing.T) {
	a := newPrefsApp(t, testAppID())
	s := settings.Defaults()
	s.Agent = settings.AgentDemo
	s.Remote, s.RemoteURL = true, "ws://127.0.0.1:1/ws"
	settings.Save(a.Preferences(), s)
	td, err := openTestDesktop(t, a, "--data-dir", memoryDataDir, "--agent", "script")
	if err != nil {
		t.Fatal(err)
	}
	if !td.d.cur.target.Embedded {
		t.Fatal("not on the embedded relay")
	}
	if !strings.Contains(td.logs.String(), "the saved settings did not start") {
		t.Fatalf("log:\n%s", td.logs.String())
	}
	td.prompt("markdown still works")
	waitConversation(t, td.d.cur, "markdown still works")

	// The command line's own relay does not start: the window says so
	// (showWindow then returns the error).
	b := newPrefsApp(t, testAppID())
	tb, err := openTestDesktop(t, b, "--data-dir", memoryDataDir, "--connect", "ws://127.0.0.1:1/ws")
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("an unreachable --connect relay: %v", err)
	}
	if got := tb.texts(); !strings.Contains(got, "pilotdesk could not start") || !strings.Contains(got, "127.0.0.1:1") || !strings.Contains(got, "disconnected") {
		t.Fatalf("the window does not say why it has no relay:\n%s", got)
	}
}

// texts is every text the window shows (labels, rich texts, buttons,
// entries, the status bar), one a line.
func (td *testDesktop) texts() string {
	td.t.Helper()
	td.loop.Drain()
	var b strings.Builder
	walk := func(o fyne.CanvasObject) {
		uitest.Walk(o, func(o fyne.CanvasObject) bool {
			if !o.Visible() {
				return false
			}
			switch v := o.(type) {
			case *canvas.Text:
				b.WriteString(v.Text + "\n")
			case *widget.Entry:
				b.WriteString(v.Text + "\n")
			case *widget.List:
				return false // rows are drawn lazily; the transcript's rows are not needed here
			}
			return true
		})
	}
	walk(td.d.win.Window().Content())
	for _, o := range td.d.win.Window().Canvas().Overlays().List() {
		walk(o)
	}
	return b.String()
}

// heldProxy forwards TCP connections to addr once released: until then a
// client's dial waits, as on a relay that is still starting.
func heldProxy(t *testing.T, addr string) (url string, release func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				<-held
				up, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c); up.Close() }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	var once sync.Once
	return "ws://" + ln.Addr().String() + "/ws", func() { once.Do(func() { close(held) }) }
}

// startRemoteStack starts a relay apart from any window's, as another
// machine's would be: the script agent of ui/testdata, owner token
// "remote-token", history in memory, on a free loopback port. It stops when
// the test ends.
func startRemoteStack(t *testing.T) *stack {
	t.Helper()
	s := relaySettings{Settings: settings.Settings{Agent: "script"}, Listen: "127.0.0.1:0", Token: "remote-token",
		Script: filepath.Join("..", "ui", "testdata", "script.json"), HeartbeatTimeout: time.Minute, DataDir: memoryDataDir}
	remote, err := startStack(context.Background(), s, slog.New(slog.NewTextHandler(&testsupport.Buffer{}, nil)))
	if err != nil {
		t.Fatalf("start the remote relay: %v", err)
	}
	t.Cleanup(func() { remote.Close(context.Background()) })
	return remote
}

// TestTheWindowShowsBeforeItsRelay: the window is built before its relay
// runs and says that it connects; what is typed meanwhile is kept and sent
// once the relay is there. A window whose relay could not start gets one
// when Settings are applied.
func TestTheWindowShowsBeforeItsRelay(t *testing.T) {
	remote := startRemoteStack(t)
	u, err := neturl.Parse(remote.LocalURL)
	if err != nil {
		t.Fatal(err)
	}
	proxyURL, release := heldProxy(t, u.Host)

	a := newPrefsApp(t, testAppID())
	td, err := startTestDesktop(t, a, "--data-dir", memoryDataDir, "--connect", proxyURL, "--token", "remote-token")
	if err != nil {
		t.Fatal(err)
	}
	td.loop.Drain()
	if td.d.cur != nil || !td.d.restarting {
		t.Fatal("the relay was there before the window: the test's proxy did not hold it")
	}
	host := strings.TrimPrefix(strings.TrimSuffix(proxyURL, "/ws"), "ws://")
	if got := td.texts(); !strings.Contains(got, "Connecting to the relay at "+host+"…") || !strings.Contains(got, "connecting…") {
		t.Fatalf("the window does not say that it connects:\n%s", got)
	}
	// Settings cannot restart a relay that is still starting.
	result := make(chan error, 1)
	td.d.restart(func(err error) { result <- err })
	if err := <-result; err == nil || !strings.Contains(err.Error(), "still starting") {
		t.Fatalf("a restart while starting: %v", err)
	}
	// Enter keeps the draft while there is no relay.
	td.prompt("typed while connecting")
	if got := td.texts(); !strings.Contains(got, "typed while connecting") {
		t.Fatalf("the draft typed while connecting is gone:\n%s", got)
	}

	release()
	td.waitStarted()
	if td.d.cur == nil || td.d.cur.target.URL != proxyURL {
		t.Fatalf("not on the relay: %v", td.d.failed())
	}
	if got := td.texts(); strings.Contains(got, "Connecting to the relay at") {
		t.Fatalf("still says it connects:\n%s", got)
	}
	// The draft is still there; Enter sends it now.
	td.prompt("")
	waitConversation(t, td.d.cur, "typed while connecting")
	if err := td.d.failed(); err != nil {
		t.Fatalf("failed() = %v after a start", err)
	}

	// No relay starts: applying settings that work starts one.
	b := newPrefsApp(t, testAppID())
	s := settings.Defaults()
	s.Agent = settings.AgentDemo
	settings.Save(b.Preferences(), s)
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	tb, err := openTestDesktop(t, b, "--data-dir", notDir)
	if err == nil || !strings.Contains(err.Error(), "the data dir cannot be made") {
		t.Fatalf("a data dir that is a file: %v", err)
	}
	if got := tb.texts(); !strings.Contains(got, "pilotdesk could not start") || !strings.Contains(got, "the data dir cannot be made") {
		t.Fatalf("the window does not say why it has no relay:\n%s", got)
	}
	s.Remote, s.RemoteURL, s.RemoteToken = true, remote.URL, "remote-token"
	settings.Save(b.Preferences(), s)
	if err := tb.restart(); err != nil {
		t.Fatal(err)
	}
	if tb.d.cur == nil || tb.d.cur.target.URL != remote.URL || tb.d.failed() != nil {
		t.Fatalf("not on the relay of the settings: %v", tb.d.failed())
	}
	if got := tb.texts(); strings.Contains(got, "pilotdesk could not start") {
		t.Fatalf("the start failure is still shown:\n%s", got)
	}
	tb.prompt("after the settings were fixed")
	waitConversation(t, tb.d.cur, "after the settings were fixed")
}

// TestApplyingSettingsSwitchesToARemoteRelay: picking a remote relay in
// Settings stops the embedded one and moves the window to the remote;
// picking the embedded one again starts it anew.
func TestApplyingSettingsSwitchesToARemoteRelay(t *testing.T) {
	remote := startRemoteStack(t)

	a := newPrefsApp(t, testAppID())
	s := settings.Defaults()
	s.Agent = settings.AgentDemo
	settings.Save(a.Preferences(), s)
	td, err := openTestDesktop(t, a, "--data-dir", memoryDataDir)
	if err != nil {
		t.Fatal(err)
	}
	embedded := td.d.cur

	s.Remote, s.RemoteURL, s.RemoteToken = true, remote.URL, "remote-token"
	settings.Save(a.Preferences(), s)
	if err := td.restart(); err != nil {
		t.Fatal(err)
	}
	r := td.d.cur
	if r.target.Embedded || r.target.URL != remote.URL || r.client.URL() != remote.URL {
		t.Fatalf("not on the remote relay: %+v", r.target)
	}
	if got := td.d.win.Window().Title(); !strings.Contains(got, strings.TrimPrefix(strings.TrimSuffix(remote.URL, "/ws"), "ws://")) {
		t.Fatalf("title %q", got)
	}
	oldCfg := client.Config{URL: embedded.target.URL, Token: embedded.target.Token, DialTimeout: 2 * time.Second}
	if _, err := oldCfg.Dial(context.Background()); err == nil {
		t.Fatal("the embedded relay still runs")
	}
	td.prompt("show me markdown on the remote")
	waitConversation(t, r, "show me markdown on the remote")

	// A wrong token is refused and the window stays on the remote relay.
	s.RemoteToken = "wrong"
	settings.Save(a.Preferences(), s)
	if err := td.restart(); err == nil {
		t.Fatal("a wrong token was accepted")
	}
	if td.d.cur.target.URL != remote.URL || td.d.cur.target.Embedded {
		t.Fatalf("after the refused token: %+v", td.d.cur.target)
	}

	s.Remote = false
	settings.Save(a.Preferences(), s)
	if err := td.restart(); err != nil {
		t.Fatal(err)
	}
	if !td.d.cur.target.Embedded {
		t.Fatal("not back on an embedded relay")
	}
	td.prompt("markdown back home")
	waitConversation(t, td.d.cur, "markdown back home")
}

// pauseGC holds the collector off with a heap limit until resumed, and
// resuming gives back what was set before, once.
func TestPauseGCHoldsTheCollectorUntilResumed(t *testing.T) {
	percent := debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	limit := debug.SetMemoryLimit(-1)

	resume := pauseGC(64 << 20)
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("GC percent while paused = %d, want -1 (off)", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 64<<20 {
		t.Errorf("memory limit while paused = %d, want %d", got, 64<<20)
	}
	resume()
	if got := debug.SetGCPercent(percent); got != percent {
		t.Errorf("GC percent after resume = %d, want %d", got, percent)
	}
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Errorf("memory limit after resume = %d, want %d", got, limit)
	}
	// A second resume changes nothing: the start-up's defer runs after
	// the app's OnStarted has resumed already.
	debug.SetGCPercent(percent + 7)
	resume()
	if got := debug.SetGCPercent(percent); got != percent+7 {
		t.Errorf("a second resume set the GC percent to %d", got)
	}
}

// TestStartupReleasedOnceTheRelayStarted: the heap start-up left free goes
// back to the system after the first relay's start has ended, not before,
// and not at all once the desktop has closed.
func TestStartupReleasedOnceTheRelayStarted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &desktop{ctx: ctx, cancel: cancel, relayStarted: make(chan struct{})}
	released := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.releaseStartup(0, func() { close(released) })
	}()
	select {
	case <-released:
		t.Fatal("released while the relay starts")
	case <-time.After(100 * time.Millisecond):
	}
	close(d.relayStarted)
	select {
	case <-done:
	case <-time.After(relaytest.Timeout):
		t.Fatal("releaseStartup did not return after the relay started")
	}
	select {
	case <-released:
	default:
		t.Fatal("not released after the relay started")
	}

	closed, stop := context.WithCancel(context.Background())
	stop()
	d = &desktop{ctx: closed, cancel: stop, relayStarted: make(chan struct{})}
	d.releaseStartup(time.Hour, func() { t.Error("released by a closed desktop") })
	close(d.relayStarted)
	d.releaseStartup(time.Hour, func() { t.Error("released by a closed desktop") })
}
