package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/ui/uitest"
)

// shownTool returns the on-screen view of tool row i.
func (h *harness) shownTool(i int) *toolView {
	h.t.Helper()
	s := h.shownRowOf(i)
	if s.tool == nil || s.cur != s.tool.obj {
		h.t.Fatalf("row %d is not a tool row", i)
	}
	return s.tool
}

// shownText joins the text of every visible label and rich text under o.
func shownText(o fyne.CanvasObject) string {
	var b strings.Builder
	uitest.Walk(o, func(o fyne.CanvasObject) bool {
		if !o.Visible() {
			return false
		}
		switch x := o.(type) {
		case *widget.Label:
			b.WriteString(x.Text + "\n")
			return false
		case *widget.RichText:
			b.WriteString(x.String() + "\n")
			return false
		}
		return true
	})
	return b.String()
}

// rowsOf returns the indexes of the rows of kind.
func rowsOf(h *harness, kind conversation.RowKind) []int {
	var out []int
	for i, r := range h.rows() {
		if r.Kind == kind {
			out = append(out, i)
		}
	}
	return out
}

// TestToolRowsExpand: a tool row is one line; expanded it shows the
// shell's command and the ends of its output (then all of it), or an
// edit's diff; the keyboard stays with the composer.
func TestToolRowsExpand(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(1000, 900)})
	h.send("do the work")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	tools := rowsOf(h, conversation.RowTool)
	if len(tools) != 2 {
		t.Fatalf("tool rows %v\n%s", tools, h.dump())
	}
	shell, edit := tools[0], tools[1]
	v := h.shownTool(shell)
	closed := h.w.transcript.heights[shell]
	if strings.Contains(shownText(v.obj), "$ go test") {
		t.Fatal("a closed row shows its output")
	}

	test.Tap(v.expand)
	h.frame()
	v = h.shownTool(shell)
	got := shownText(v.obj)
	if !strings.Contains(got, "$ go test ./...") || !strings.Contains(got, "pkg1\t") || !strings.Contains(got, "PASS") ||
		!strings.Contains(got, "… 9 more lines …") || strings.Contains(got, "pkg10\t") {
		t.Fatalf("expanded shell row:\n%s", got)
	}
	if h.w.transcript.heights[shell] <= closed {
		t.Fatalf("the expanded row is %v high, closed %v", h.w.transcript.heights[shell], closed)
	}
	if h.w.Window().Canvas().Focused() != h.w.composer {
		t.Fatal("expanding a row took the keyboard from the composer")
	}
	tapButton(t, v.obj, "Show all 21 lines")
	h.frame()
	if got := shownText(h.shownTool(shell).obj); !strings.Contains(got, "pkg10\t") || !strings.Contains(got, "Show less") {
		t.Fatalf("show all:\n%s", got)
	}

	test.Tap(h.shownTool(edit).expand)
	h.frame()
	got = shownText(h.shownTool(edit).obj)
	if !strings.Contains(got, "main.go") || !strings.Contains(got, "- func find(users []User, id int) User {") || !strings.Contains(got, "+ \treturn byID[id]") {
		t.Fatalf("expanded edit row:\n%s", got)
	}

	test.Tap(h.shownTool(shell).expand)
	h.frame()
	if strings.Contains(shownText(h.shownTool(shell).obj), "$ go test") || h.w.transcript.heights[shell] != closed {
		t.Fatal("collapsing did not bring the row back to one line")
	}
}

// TestDeniedToolShowsWhatWouldRun: in Plan the expanded row says nothing
// ran and shows what would have.
func TestDeniedToolShowsWhatWouldRun(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(1000, 900)})
	test.Tap(h.w.mode.toggle.plan)
	h.send("do the work")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	edit := rowsOf(h, conversation.RowTool)[1]
	test.Tap(h.shownTool(edit).expand)
	h.frame()
	got := shownText(h.shownTool(edit).obj)
	if !strings.Contains(got, "nothing ran") || !strings.Contains(got, "+ \treturn byID[id]") {
		t.Fatalf("denied edit, expanded:\n%s", got)
	}
}
