package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
