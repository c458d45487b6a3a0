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
	"os"
	"path/filepath"
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

// The desktop window's test harness: the window built as runWindow builds
// it on Fyne's test app, with preferences in a file, its relay, a relay
// apart from it behind a proxy that holds connections, and waits on what
// a relay ran.

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
