package ui

import (
	"context"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// The notices above the transcript (notice.go): the first run's demo
// notice and the one naming saved settings that did not start.

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
	if body := strings.Join(texts(n.root), "\n"); !strings.Contains(body, FirstRunTitle) || strings.Contains(body, "Use the demo") {
		t.Fatalf("the compact notice lacks its title, or still offers the demo in use:\n%s", body)
	}
	tapButton(t, n.root, "Open Settings")
	if h.w.settings == nil {
		t.Fatal("Open Settings did not open the dialog")
	}
	h.w.settings.close()
	tapButton(t, n.root, "Dismiss")
	if h.w.notice != nil || !h.app.Preferences().Bool(prefFirstRunDismissed) {
		t.Fatal("Dismiss did not dismiss the compact notice for good")
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

// TestFirstRunNoticeCompactWithHistory: a window that starts on a relay
// whose conversations show the demo was used (the next start of the app)
// shows the first-run notice as its one line from the start, as the first
// prompt left it; it showed it whole again at every start, a fifth of the
// window over the conversations.
func TestFirstRunNoticeCompactWithHistory(t *testing.T) {
	reason := "No GitHub Copilot CLI was found on this computer."
	h := newHarness(t, harnessConfig{options: Options{DemoReason: reason}})
	h.send("help")
	h.waitFor("the help turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })

	c, err := client.Config{URL: h.srv.URL, Token: h.srv.Token}.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	later := NewWindow(h.app, c, Options{DemoReason: reason})
	t.Cleanup(func() { later.Close(); c.Close(); later.Wait(); later.Window().Close() })
	n := later.notice
	if n == nil || n.id != firstRunNoticeID {
		t.Fatal("no first-run notice at the next start")
	}
	h.waitFor("the notice to be one line", func() bool {
		later.frame()
		return n.shrunk
	})
	if later.notice != n {
		t.Fatal("the history dismissed the notice: Use the demo does that")
	}

	// A relay with no conversation yet: the notice stays whole.
	fresh := newHarness(t, harnessConfig{options: Options{DemoReason: reason}})
	fresh.frame()
	if n := fresh.w.notice; n == nil || n.shrunk {
		t.Fatalf("on a relay with no conversation the notice is %+v, want it whole", n)
	}
}
