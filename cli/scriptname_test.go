package cli

import (
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/ui/uitest"
)

// TestScriptNamedInTheWindow: with --script FILE the window's empty
// conversation and its list name the scenario that runs, where they said
// "built-in demo" and "demo (scripted)" whatever the scripted agent played.
func TestScriptNamedInTheWindow(t *testing.T) {
	a := newPrefsApp(t, testAppID())
	td, err := openTestDesktop(t, a, "--data-dir", memoryDataDir, "--script", writeChatScript(t))
	if err != nil {
		t.Fatal(err)
	}
	td.loop.Drain()
	if text := windowText(td.d.win.Window()); !strings.Contains(text, "scripted agent playing chat-script.json") || strings.Contains(text, "demo") {
		t.Fatalf("the empty conversation does not name the scenario:\n%s", text)
	}
	td.prompt("deploy now")
	waitConversation(t, td.d.cur, "deploy now")
	td.loop.WaitFor(t, 30*time.Second, "the list to name the scenario", func() bool {
		return strings.Contains(windowText(td.d.win.Window()), "chat-script.json (scripted)")
	}, func() string { return windowText(td.d.win.Window()) })
	if text := windowText(td.d.win.Window()); strings.Contains(text, "demo") {
		t.Fatalf("the window still speaks of the demo:\n%s", text)
	}
}

// windowText is the text of every label the window shows (none under a
// hidden container).
func windowText(w fyne.Window) string {
	var parts []string
	uitest.Walk(w.Canvas().Content(), func(o fyne.CanvasObject) bool {
		if !o.Visible() {
			return false
		}
		if l, ok := o.(*widget.Label); ok {
			parts = append(parts, l.Text)
		}
		return true
	})
	return strings.Join(parts, "\n")
}
