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
	test.Tap(h.w.mode.toggle.plan)
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
	// The agent played exactly the ticked step: one approved edit of
	// main.go after the prompt, no run of the tests.
	rows = h.rows()
	var played []string
	for _, r := range rows[rowsOf(h, conversation.RowUser)[1]:] {
		if r.Kind == conversation.RowTool {
			played = append(played, r.Title+" "+r.State)
		}
	}
	if len(played) != 1 || played[0] != "edit "+conversation.ToolApproved || !strings.Contains(h.text(), "Step 1: edit main.go") {
		t.Fatalf("played %q after Run in Act:\n%s", played, h.dump())
	}
	// The card is done: it says so, and cannot run the plan again.
	p = h.shownPlan(planRow)
	if !p.run.Disabled() || p.run.Text != "Ran in Act" || !strings.Contains(p.title.Text, "run in Act") {
		t.Fatalf("after its run the card says %q, its button %q (disabled %v)", p.title.Text, p.run.Text, p.run.Disabled())
	}
	users := len(rowsOf(h, conversation.RowUser))
	test.Tap(p.run)
	p.runTicked()
	h.frame()
	if n := len(rowsOf(h, conversation.RowUser)); n != users {
		t.Fatal("the plan ran twice")
	}
}

// TestPlanStepsByKeyboard: Space on a step Tab reached unticks it and
// leaves the keyboard there, so Tab goes on to the next step; a click
// unticks a step and gives the keyboard back to the composer.
func TestPlanStepsByKeyboard(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(1000, 900)})
	test.Tap(h.w.mode.toggle.plan)
	h.send("do the work")
	h.waitFor("the plan turn", func() bool { return completedTurns(h) == 1 && len(rowsOf(h, conversation.RowPlan)) == 1 })
	h.frame()
	plan := rowsOf(h, conversation.RowPlan)[0]
	steps := h.shownPlan(plan).steps.Objects
	first, second := steps[0].(*rowCheck), steps[1].(*rowCheck)
	c := h.w.Window().Canvas()
	for i := 0; c.Focused() != first; i++ {
		if i == 300 {
			t.Fatal("Tab never reached the plan's first step")
		}
		test.FocusNext(c)
	}
	c.Focused().TypedRune(' ')
	h.frame()
	if first.Checked || !second.Checked {
		t.Fatalf("after Space on the first step: ticked %v, %v; want false, true", first.Checked, second.Checked)
	}
	if c.Focused() != first {
		t.Fatalf("Space moved the keyboard to %T", c.Focused())
	}
	test.FocusNext(c)
	if c.Focused() != second {
		t.Fatalf("Tab after the first step went to %T, want the second step", c.Focused())
	}

	test.Tap(second)
	h.frame()
	if second.Checked || c.Focused() != h.w.composer {
		t.Fatalf("after a click on the second step: ticked %v, the keyboard on %T; want unticked, the composer", second.Checked, c.Focused())
	}
	if !h.shownPlan(plan).run.Disabled() {
		t.Fatal("Run in Act is enabled with no step ticked")
	}
}

// TestPlanRunGivenBack: a Run in Act prompt the relay never got (its
// connection dropped first) comes back into the composer, and its card is
// runnable again, not "run in Act"; run then, the plan runs and the card is
// done.
func TestPlanRunGivenBack(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(1000, 900)})
	test.Tap(h.w.mode.toggle.plan)
	h.send("do the work")
	h.waitFor("the plan turn", func() bool { return h.lastRow(conversation.RowPlan).Kind == conversation.RowPlan })
	planRow := len(h.rows()) - 1

	before := h.proxy.Swallowed()
	h.proxy.SetSwallow(true)
	test.Tap(h.shownPlan(planRow).run)
	h.waitFor("the plan's prompt on its way", func() bool { return h.proxy.Swallowed() >= before+100 })
	h.frame()
	if p := h.shownPlan(planRow); !p.run.Disabled() {
		t.Fatal("the card can run again while its prompt is on its way")
	}
	h.proxy.SetSwallow(false)
	h.proxy.DropAll()
	h.waitFor("the plan's prompt back in the composer", func() bool { return conversation.IsPlanPrompt(h.w.composer.Text) })
	h.frame()
	p := h.shownPlan(planRow)
	if p.run.Disabled() || !strings.Contains(p.title.Text, "denied in Plan") {
		t.Fatalf("after its prompt came back the card says %q, its button %q (disabled %v)", p.title.Text, p.run.Text, p.run.Disabled())
	}
	h.w.composer.SetText("")
	test.Tap(p.run)
	h.waitFor("the plan to run", func() bool {
		return conversation.IsPlanPrompt(h.lastRow(conversation.RowUser).Text) && h.hasStatus(protocol.StatusCompleted)
	})
	if p := h.shownPlan(planRow); !p.run.Disabled() || !strings.Contains(p.title.Text, "run in Act") {
		t.Fatalf("after its run the card says %q (disabled %v)", p.title.Text, p.run.Disabled())
	}
}
