package ui

import (
	"testing"

	"fyne.io/fyne/v2"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// A turn's status line draws its icon level with the first line of its
// text, as a tool row's header does: the icon's middle is the text line's.
func TestLineIconLevelWithText(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(1000, 680)})
	h.send("fail")
	h.waitFor("the failed turn", func() bool { return h.hasStatus(protocol.StatusError) })
	h.frame()
	d := fyne.CurrentApp().Driver()
	checked := 0
	for i, r := range h.rows() {
		if r.Kind != conversation.RowStatus && r.Kind != conversation.RowNote {
			continue
		}
		v := h.shownRowOf(i).line
		icon := d.AbsolutePositionForObject(v.icon).Y + v.icon.Size().Height/2
		text := d.AbsolutePositionForObject(v.text).Y + labelLineHeight(v.text)/2
		if diff := icon - text; diff > 0.5 || diff < -0.5 {
			t.Errorf("row %d (%q): the icon's middle is %v px from its text's first line's", i, r.Text, diff)
		}
		checked++
	}
	if checked == 0 {
		t.Fatalf("no status or note row:\n%s", h.dump())
	}
}
