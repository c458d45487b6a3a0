package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/theme"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestAgentNamed: the relay's list names each conversation's agent; the
// sidebar's entry says it after the conversation's state, and the window's
// title after the relay's name while the conversation shows.
func TestAgentNamed(t *testing.T) {
	h := newACPHarness(t, theme.DefaultTheme())
	h.send("retry three times")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	// The conversation's folder (the relay's default, this package's)
	// comes first (docs/workspaces.md), the agent last; the two come in
	// separate events (the list's entry, the subscription's answer).
	const title = "ui — pilotdesk — embedded relay · OpenCode (ACP)"
	h.waitFor("the folder and the agent in the title", func() bool { return h.w.Window().Title() == title })
	h.waitFor("the sidebar entry", func() bool { return len(h.w.sidebar.entries) == 1 && h.w.sidebar.entries[0].Agent == "OpenCode (ACP)" })
	h.frame()
	if got := shownText(h.w.sidebar.list); !strings.Contains(got, "idle · OpenCode (ACP)") {
		t.Errorf("the sidebar shows %q", got)
	}
	// A new conversation, not on the relay yet, names no agent.
	h.w.newConversation()
	h.frame()
	if got := h.w.Window().Title(); got != "pilotdesk — embedded relay" {
		t.Errorf("window title of a new conversation %q", got)
	}
}
