package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestNewMessagesBelow: scrolled up, a turn another client starts in the
// conversation leaves the view where the user reads and shows a pill
// that counts the new messages below; pressing it shows them and hides
// it. A prompt sent from the window brings the newest into view however
// far up the user was.
func TestNewMessagesBelow(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(900, 420)})
	h.send("markdown")
	h.waitFor("the first turn", func() bool { return completedTurns(h) == 1 })
	h.send("markdown")
	h.waitFor("the second turn", func() bool { return completedTurns(h) == 2 })
	h.frame()
	tr := h.w.transcript
	if tr.pill.Visible() {
		t.Fatal("the pill shows at the bottom")
	}
	tr.scrollToTop()
	h.frame()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	other, err := client.Config{URL: h.srv.URL, Token: h.srv.Token}.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Send(ctx, h.w.current, "do the work", protocol.ModeAct, ""); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the other client's turn", func() bool { return completedTurns(h) == 3 })
	h.frame()
	if got := tr.list.GetScrollOffset(); got != 0 {
		t.Fatalf("new rows moved the view the user reads to %v", got)
	}
	if !tr.pill.Visible() || !strings.HasSuffix(tr.pill.Text, "new messages") || tr.unseen < 3 {
		t.Fatalf("pill shown %v, %q (%d unseen)", tr.pill.Visible(), tr.pill.Text, tr.unseen)
	}
	test.Tap(tr.pill)
	h.frame()
	if !tr.atBottom() || tr.pill.Visible() {
		t.Fatalf("after the pill: at the bottom %v, pill shown %v", tr.atBottom(), tr.pill.Visible())
	}

	tr.scrollToTop()
	h.frame()
	h.send("markdown")
	h.waitFor("the sent turn", func() bool { return completedTurns(h) == 4 })
	h.frame()
	if !tr.atBottom() || tr.pill.Visible() {
		t.Fatalf("after a send from far up: at the bottom %v, pill shown %v", tr.atBottom(), tr.pill.Visible())
	}
}
