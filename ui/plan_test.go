package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// shownPlan returns the on-screen plan card of row i.
func (h *harness) shownPlan(i int) *planView {
	h.t.Helper()
	s := h.shownRowOf(i)
	if s.plan == nil || s.cur != s.plan.obj {
		h.t.Fatalf("row %d is not a plan", i)
	}
	return s.plan
}

// TestPlanCardRunsTheTickedSteps: a Plan turn ends with its denied calls
// as a plan; unticking a step and pressing Run in Act switches to Act and
// sends a prompt for exactly the ticked steps, which then run.
func TestPlanCardRunsTheTickedSteps(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(1000, 900)})
	test.Tap(h.w.toggle.plan)
	h.send("do the work")
	h.waitFor("the plan turn", func() bool { return h.lastRow(conversation.RowPlan).Kind == conversation.RowPlan })
	rows := h.rows()
	planRow := len(rows) - 1
	p := h.shownPlan(planRow)
	if got := shownText(p.obj); !strings.Contains(got, "The plan: 2 steps, denied in Plan") {
		t.Fatalf("plan card:\n%s", got)
	}
	if len(p.steps.Objects) != 2 {
		t.Fatalf("%d steps", len(p.steps.Objects))
	}
	test.Tap(p.steps.Objects[0].(fyne.Tappable)) // untick "run `go test ./...`"
	h.frame()
	test.Tap(h.shownPlan(planRow).run)
	h.waitFor("the plan to run", func() bool {
		return h.lastRow(conversation.RowUser).Text != "do the work" && h.hasStatus(protocol.StatusCompleted)
	})
	sent := h.lastRow(conversation.RowUser)
	if sent.Mode != protocol.ModeAct || sent.Text != "Carry out exactly these steps of your plan, in this order, and nothing else:\n1. edit main.go (the change you proposed)\n" {
		t.Fatalf("sent %q in %s", sent.Text, sent.Mode)
	}
	if h.w.shownMode() != protocol.ModeAct {
		t.Fatal("the window is not in Act after Run in Act")
	}
}
