package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/settings"
)

// TestChatAttachesToTheWindowsConversation: `pilotdesk chat` on the data
// dir of a running window attaches to its relay and opens the
// conversation the window shows (the window notes it in window.json),
// not a new, empty one; without that note, the latest conversation.
func TestChatAttachesToTheWindowsConversation(t *testing.T) {
	a := newPrefsApp(t, testAppID())
	start := settings.Defaults()
	start.Agent = settings.AgentDemo
	settings.Save(a.Preferences(), start)
	dir := t.TempDir()
	td, err := openTestDesktop(t, a, "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	td.prompt("markdown from the window")
	waitConversation(t, td.d.cur, "markdown from the window")
	b, err := os.ReadFile(filepath.Join(dir, shownName))
	if err != nil {
		t.Fatalf("the window did not note its conversation: %v", err)
	}
	var shown shownConversation
	if err := json.Unmarshal(b, &shown); err != nil || shown.PID != os.Getpid() || shown.ConversationID == "" {
		t.Fatalf("window.json: %s (%v)", b, err)
	}
	chat := func() string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		env := Env{Stdin: strings.NewReader("/quit\n"), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
		if code := Run(context.Background(), []string{"chat", "--data-dir", dir}, env); code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
		}
		return stdout.String()
	}
	out := chat()
	if !strings.Contains(out, "Conversation "+shown.ConversationID) || !strings.Contains(out, "markdown from the window") {
		t.Fatalf("the chat did not open the window's conversation %s:\n%s", shown.ConversationID, out)
	}
	// Without the window's note: the latest conversation, still not a new one.
	if err := os.Remove(filepath.Join(dir, shownName)); err != nil {
		t.Fatal(err)
	}
	if out := chat(); !strings.Contains(out, "Conversation "+shown.ConversationID) {
		t.Fatalf("without window.json the chat did not open the latest conversation %s:\n%s", shown.ConversationID, out)
	}
}

// TestWindowReopensWhereTheUserWas: a window started again on its data
// dir shows the conversation it showed when it closed, not a new, empty
// one; without that note (window.json), the latest conversation, as a
// chat attached to the app does. On a fresh data dir it starts in a new
// conversation with its greeting.
func TestWindowReopensWhereTheUserWas(t *testing.T) {
	a := newPrefsApp(t, testAppID())
	start := settings.Defaults()
	start.Agent = settings.AgentDemo
	settings.Save(a.Preferences(), start)
	dir := t.TempDir()
	// shows waits until the window shows the conversation holding text,
	// and returns the conversation it notes in window.json.
	shows := func(td *testDesktop, text string) string {
		t.Helper()
		td.loop.WaitFor(t, 30*time.Second, "the window to show "+text, func() bool {
			return strings.Contains(windowText(td.d.win.Window()), text)
		}, func() string { return windowText(td.d.win.Window()) })
		return readShown(dir).ConversationID
	}

	td, err := openTestDesktop(t, a, "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	shows(td, "Type a prompt below and press Enter")
	td.prompt("markdown shown at the end")
	waitConversation(t, td.d.cur, "markdown shown at the end")
	shown := shows(td, "markdown shown at the end")
	// A later conversation, made from elsewhere: the latest, not shown.
	ctx, c, done := dialOwner(t, td.d.cur)
	latest := uuid.NewString()
	if err := c.Send(ctx, latest, "markdown made elsewhere", protocol.ModeAct, ""); err != nil {
		t.Fatal(err)
	}
	waitConversation(t, td.d.cur, "markdown made elsewhere")
	done()
	td.d.close()

	// reopen starts the window again and waits until it shows a
	// conversation holding want (the list names both).
	reopen := func(want string) {
		t.Helper()
		td, err := openTestDesktop(t, a, "--data-dir", dir)
		if err != nil {
			t.Fatal(err)
		}
		defer td.d.close()
		td.waitConversationShown(want)
	}
	reopen("markdown shown at the end")
	if got := readShown(dir).ConversationID; got != shown {
		t.Fatalf("the reopened window notes %q, want %q", got, shown)
	}
	// Without the note: the latest conversation.
	if err := os.Remove(filepath.Join(dir, shownName)); err != nil {
		t.Fatal(err)
	}
	reopen("markdown made elsewhere")
	if got := readShown(dir).ConversationID; got != latest {
		t.Fatalf("the reopened window notes %q, want the latest %q", got, latest)
	}
}

// waitConversationShown waits until the window shows a conversation that
// holds text: not the new one's greeting, with text maybe only in the
// list.
func (td *testDesktop) waitConversationShown(text string) {
	td.t.Helper()
	td.loop.WaitFor(td.t, 30*time.Second, "the window to show the conversation with "+text, func() bool {
		shown := windowText(td.d.win.Window())
		return strings.Contains(shown, text) && !strings.Contains(shown, "Type a prompt below")
	}, func() string { return windowText(td.d.win.Window()) })
}

// TestWindowReopensOnARemoteRelay: on a remote relay too, a window started
// again shows the conversation it showed last there (kept in its
// preferences), not the latest.
func TestWindowReopensOnARemoteRelay(t *testing.T) {
	remote := startRemoteStack(t)
	a := newPrefsApp(t, testAppID())
	open := func() *testDesktop {
		t.Helper()
		td, err := openTestDesktop(t, a, "--data-dir", memoryDataDir, "--connect", remote.URL, "--token", "remote-token")
		if err != nil {
			t.Fatal(err)
		}
		return td
	}
	key := remoteShownPref + remote.URL
	td := open()
	td.prompt("markdown shown at the end")
	waitConversation(t, td.d.cur, "markdown shown at the end")
	td.waitConversationShown("markdown shown at the end")
	shown := a.Preferences().String(key)
	if shown == "" {
		t.Fatal("the window did not note its conversation")
	}
	ctx, c, done := dialOwner(t, td.d.cur)
	if err := c.Send(ctx, uuid.NewString(), "markdown made elsewhere", protocol.ModeAct, ""); err != nil {
		t.Fatal(err)
	}
	waitConversation(t, td.d.cur, "markdown made elsewhere")
	done()
	td.d.close()

	td = open()
	defer td.d.close()
	td.waitConversationShown("markdown shown at the end")
	if got := a.Preferences().String(key); got != shown {
		t.Fatalf("the reopened window shows %q, want %q, the one it showed last", got, shown)
	}
}
