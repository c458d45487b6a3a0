package ui

import (
	"context"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// The window moving to another relay in place (Window.SetClient), as
// applying settings does.

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
