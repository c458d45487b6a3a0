package cli

import (
	"context"
	"io"
	"log/slog"
	neturl "net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/settings"
)

// The window and its relay: starting, applying settings that restart or
// switch the relay, and what the window holds while it waits for one.

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
	// A plain sentence: the first-run notice goes on to say how to install
	// the CLI, so the reason must not say it again (5a6776c made it the
	// backend's "not found: …; install it with npm install …, or pass its
	// path with --copilot-path", and the notice gave the hint twice).
	if tg.Agent != "script" || tg.DemoReason != "No GitHub Copilot CLI was found at "+missing+"." {
		t.Fatalf("agent %q, reason %q", tg.Agent, tg.DemoReason)
	}
	if opts := td.d.options(td.d.cur, ""); opts.DemoReason != tg.DemoReason || opts.Agent != "script" || opts.Version != Version {
		t.Fatalf("window options %+v", opts)
	}
}

// TestDemoReasonIsTheBackendsOwnWords: why the window runs the demo is
// said in the words the backend gives the relay, whatever the backend:
// a Copilot CLI that is there but not executable is named, with the
// permission it lacks (where the first-run notice said "No GitHub Copilot
// CLI was found"), and an ACP agent's missing command is explained too
// (where any failure but Copilot's read "The GitHub Copilot CLI could not
// start").
func TestDemoReasonIsTheBackendsOwnWords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	plain := filepath.Join(t.TempDir(), "copilot")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := relaySettings{Settings: settings.Settings{Agent: settings.AgentAuto, CopilotPath: plain}, DataDir: memoryDataDir}
	a, reason, err := buildAgent(ctx, s, logger)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if a.Name() != "script" || !strings.HasPrefix(reason, "GitHub Copilot CLI cannot be run: permission denied on "+plain+"; make it executable") ||
		strings.Contains(reason, "not found") || !strings.HasSuffix(reason, ".") {
		t.Errorf("a Copilot CLI that is not executable: agent %s, reason %q", a.Name(), reason)
	}

	s = relaySettings{Settings: settings.Settings{Agent: settings.AgentACP, ACPCommand: "/nonexistent/agent --acp"}, DataDir: memoryDataDir}
	_, _, err = buildAgent(ctx, s, logger)
	if err == nil {
		t.Fatal("an ACP agent with a missing command started")
	}
	if got, want := whyDemo(s, err), "The ACP agent cannot start: ACP agent not found: \"/nonexistent/agent\""; !strings.HasPrefix(got, want) ||
		!strings.Contains(got, "install the agent or fix --acp-command") || !strings.HasSuffix(got, ".") || !strings.Contains(got, err.Error()[1:]) {
		t.Errorf("an ACP agent's missing command: %q, want %q…, the relay's %q", got, want, err)
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

// TestTheWindowShowsBeforeItsRelay: the window is built before its relay
// runs and says that it connects; what is typed meanwhile is kept and sent
// once the relay is there. A window whose relay could not start gets one
// when Settings are applied, and shows its latest conversation.
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
	// Its first relay's list brings the window to the latest
	// conversation, as at any start; the prompt goes on there.
	tb.waitConversationShown("typed while connecting")
	tb.prompt("after the settings were fixed")
	waitPrompt(t, tb.d.cur, "typed while connecting", "after the settings were fixed")
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
