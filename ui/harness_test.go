package ui

import (
	"cmp"
	"context"
	_ "embed"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/client/clienttest"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session/script"
	"github.com/pilotdesk/pilotdesk/ui/uitest"
)

//go:embed testdata/script.json
var testScript []byte

// waitTimeout bounds every wait for the window: what the tests wait for
// does come (a turn through the real relay, a reconnect, a fetch), and a
// busy machine with -race can hold a goroutine for seconds; only a wait
// that should end fails at the bound.
const waitTimeout = relaytest.Timeout

// harness is a window on the Fyne test driver, connected through a cutting
// proxy to a real relay that plays testdata/script.json.
type harness struct {
	t      testing.TB
	app    fyne.App
	loop   *uitest.Loop // the UI goroutine's queue: the test runs it
	srv    *relaytest.Server
	proxy  *clienttest.Proxy
	client *client.Client
	w      *Window
	clock  *fakeClock
}

type harnessConfig struct {
	relay   relay.Config
	theme   fyne.Theme
	size    fyne.Size
	options Options
	// fakeClock freezes the window's clock (countdowns) at a fixed time.
	fakeClock bool
	// minBackoff is the client's first wait before it dials again
	// (default 20 ms, the longest 200 ms or minBackoff).
	minBackoff time.Duration
}

// fakeClock lets tests freeze the countdowns for screenshots. It is read
// by the client's goroutine and set by the test.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC).UnixNano())
	return c
}

// now is in UTC, so that a time the window prints is the same in every
// time zone the tests run in.
func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func newHarness(t testing.TB, hc harnessConfig) *harness {
	t.Helper()
	s, err := script.Parse("testdata/script.json", testScript)
	if err != nil {
		t.Fatal(err)
	}
	if hc.relay.Agent == nil {
		hc.relay.Agent = script.New(s)
	}
	if hc.relay.Token == "" {
		hc.relay.Token = "test-token"
	}
	var clock *fakeClock
	if hc.fakeClock {
		// The relay's budget and device tokens on the same clock: when a
		// spent budget lets turns start again, and when a token made in a
		// picture expires, are then the same each run.
		clock = newFakeClock()
		hc.relay.BudgetClock = clock.now
		hc.relay.DeviceClock = clock.now
	}
	srv := relaytest.Start(t, hc.relay)
	proxy := clienttest.StartProxy(t, srv.URL)

	a, loop := uitest.NewApp(t)
	th := hc.theme
	if th == nil {
		th = theme.DefaultTheme()
	}
	a.Settings().SetTheme(th)

	ctx, cancel := context.WithCancel(context.Background())
	minBackoff := cmp.Or(hc.minBackoff, 20*time.Millisecond)
	c, err := client.Config{URL: proxy.URL, Token: srv.Token, Kind: protocol.ClientWindow, MinBackoff: minBackoff, MaxBackoff: max(minBackoff, 200*time.Millisecond)}.Dial(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	opts := hc.options
	if clock != nil {
		opts.Now = clock.now
	}
	w := NewWindow(a, c, opts)
	size := hc.size
	if size.IsZero() {
		size = fyne.NewSize(1000, 680)
	}
	w.Window().Resize(size)
	w.Window().Show()
	h := &harness{t: t, app: a, loop: loop, srv: srv, proxy: proxy, client: c, w: w, clock: clock}
	t.Cleanup(func() {
		w.Close()
		c.Close()
		cancel()
		w.Wait()
		w.Window().Close()
	})
	// Start from a settled window: the client's "live" has been applied.
	h.waitFor("the connection to go live", func() bool { return h.w.store.State().State == client.StateLive })
	return h
}

// waitFor runs the UI loop, where the window draws its frames, until cond
// holds, failing after waitTimeout.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	h.loop.WaitFor(h.t, waitTimeout, what, cond, func() string { return "transcript:\n" + h.dump() })
}

// frame runs the UI loop and then draws a frame at once, as the frame
// timer would a moment later: for a test that has just typed or tapped.
func (h *harness) frame() {
	h.loop.Drain()
	h.w.frame()
}

// send types a prompt in the composer and presses Enter.
func (h *harness) send(prompt string) {
	h.t.Helper()
	h.w.composer.SetText(prompt)
	h.w.composer.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
}

// rows returns the transcript rows the window shows.
func (h *harness) rows() []conversation.Row { return h.w.transcript.rows }

// lastRow returns the last row of a kind, or a zero Row.
func (h *harness) lastRow(kind conversation.RowKind) conversation.Row {
	rows := h.rows()
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Kind == kind {
			return rows[i]
		}
	}
	return conversation.Row{}
}

func (h *harness) hasStatus(status string) bool {
	r := h.lastRow(conversation.RowStatus)
	return r.State == status
}

// text joins every assistant text row.
func (h *harness) text() string {
	var b strings.Builder
	for _, r := range h.rows() {
		if r.Kind == conversation.RowText || r.Kind == conversation.RowCode {
			b.WriteString(r.Text)
			b.WriteString("|")
		}
	}
	return b.String()
}

func (h *harness) dump() string {
	var b strings.Builder
	names := []string{"user", "text", "code", "tool", "status", "mode", "note", "plan", "reasoning", "agent plan"}
	for _, r := range h.rows() {
		b.WriteString(names[r.Kind] + ": " + r.Text + " [" + r.State + "]\n")
	}
	return b.String()
}

// modalOpen reports whether the input modal is on screen.
func (h *harness) modalOpen() bool {
	return h.w.modal != nil && len(h.w.Window().Canvas().Overlays().List()) > 0
}

// waitModal waits for the modal of a request of the given kind.
func (h *harness) waitModal(kind string) *inputModal {
	h.t.Helper()
	h.waitFor("the "+kind+" modal", func() bool { return h.modalOpen() && h.w.modal.kind == kind })
	return h.w.modal
}

// typeRunes types into whatever has the keyboard.
func (h *harness) typeRunes(s string) {
	c := h.w.Window().Canvas()
	for _, r := range s {
		if f := c.Focused(); f != nil {
			f.TypedRune(r)
		} else {
			h.w.modal.typedRune(r)
		}
	}
}

func (h *harness) key(name fyne.KeyName) {
	c := h.w.Window().Canvas()
	ev := &fyne.KeyEvent{Name: name}
	if f := c.Focused(); f != nil {
		f.TypedKey(ev)
	} else if h.w.modal != nil {
		h.w.modal.typedKey(ev)
	}
}

// lastCode returns the code of the last code row.
func (h *harness) lastCode() string { return h.lastRow(conversation.RowCode).Text }

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

// captureLogs is a logger at debug level and what it has logged so far.
func captureLogs() (*slog.Logger, func() string) {
	var buf testsupport.Buffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf.String
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
