package ui

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/chat"
	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestFrontEndsRenderTheSameFold: the window and the terminal client show
// the same tool summaries, usage and quota text for the same event stream,
// because both render one fold (package conversation). The window runs a
// turn; the terminal client then replays that conversation from the relay.
func TestFrontEndsRenderTheSameFold(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("renderers")
	h.waitFor("the turn to end", func() bool { return h.hasStatus(protocol.StatusCompleted) })

	var term bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, err := client.Dial(ctx, h.srv.URL, h.srv.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := chat.Run(ctx, chat.Config{Conn: c, In: strings.NewReader(""), Out: &term, ConversationID: h.w.current, Now: time.Now}); err != nil {
		t.Fatalf("chat: %v\n%s", err, term.String())
	}
	terminal := term.String()

	var tools []conversation.Row
	for _, r := range h.rows() {
		if r.Kind == conversation.RowTool {
			tools = append(tools, r)
		}
	}
	usageBar := h.w.status.usage.text()
	for _, tc := range []struct {
		what, want string
		window     string // what the window shows for it
	}{
		{"the edit's summary", "src/app.go", tools[0].Text},
		{"the fetch's summary", "a=x b=2", tools[1].Text},
		{"the premium quota", "42 of 300 premium requests used, 86% left", usageBar},
		{"the model", "claude-sonnet-4", usageBar},
	} {
		if !strings.Contains(tc.window, tc.want) {
			t.Errorf("%s: the window shows %q, want %q in it", tc.what, tc.window, tc.want)
		}
		if !strings.Contains(terminal, tc.want) {
			t.Errorf("%s: the terminal shows\n%s\nwant %q in it", tc.what, terminal, tc.want)
		}
	}
	// The window's usage bar and the terminal's usage line are both made
	// from the fold's usage by the same words.
	if !strings.Contains(usageBar, "chat unlimited") || !strings.Contains(terminal, "usage: claude-sonnet-4 · 15.0k in / 900 out tokens · cost 2 · 42 of 300 premium requests used, 86% left") {
		t.Errorf("usage: window %q, terminal\n%s", usageBar, terminal)
	}
}
