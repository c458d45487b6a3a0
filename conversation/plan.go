package conversation

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// PlanStep is one step of a plan: a tool call Plan denied.
type PlanStep struct {
	Row  int // the tool row
	Tool string
	Work ToolWork
}

// Plan returns the steps of a RowPlan row of s.
func (s *State) Plan(row int) []PlanStep {
	return PlanSteps(s.Rows, row)
}

// PlanSteps returns the steps of rows[row], a RowPlan.
func PlanSteps(rows []Row, row int) []PlanStep {
	if row < 0 || row >= len(rows) || rows[row].Kind != RowPlan {
		return nil
	}
	var out []PlanStep
	for _, i := range rows[row].Steps() {
		if i < 0 || i >= len(rows) {
			continue
		}
		r := rows[i]
		out = append(out, PlanStep{Row: i, Tool: r.Title, Work: DescribeTool(r.Title, []byte(r.Args), "")})
	}
	return out
}

// StepText says what a step does, on one line: "run `go test ./...`",
// "edit main.go", "create notes.md".
func StepText(p PlanStep) string {
	w := p.Work
	switch w.Kind {
	case ToolShell:
		return "run `" + OneLine(w.Command, 200) + "`"
	case ToolEdit:
		return "edit " + cmp.Or(w.Path, "a file")
	case ToolCreate:
		return "create " + cmp.Or(w.Path, "a file")
	case ToolRead:
		return "read " + cmp.Or(w.Path, "a file")
	case ToolSearch:
		return fmt.Sprintf("search for %q in %s", w.Query, cmp.Or(w.Path, "the project"))
	}
	return p.Tool
}

// planPromptHead is the first line of PlanPrompt.
const planPromptHead = "Carry out exactly these steps of your plan, in this order, and nothing else:"

// The words of a plan card (the steps a turn in Plan wanted to take), the
// window's and the web client's.
const (
	// PlanCardHint is under the card's steps until the plan runs.
	PlanCardHint = "Untick what should not run. Run in Act switches this conversation to Act and asks the agent for exactly these steps."
	// RunInAct is the card's button; RanInAct, the button once the plan ran.
	RunInAct = "Run in Act"
	RanInAct = "Ran in Act"
	// PlanBusy is said in place of a plan run while a turn runs.
	PlanBusy = "A turn is still running: stop it or wait for its end, then run the plan."
)

// PlanCardTitle is the title of a plan card of n steps, run in Act
// (ran) or not yet.
func PlanCardTitle(n int, ran bool) string {
	steps := "1 step"
	if n != 1 {
		steps = fmt.Sprintf("%d steps", n)
	}
	if ran {
		return "The plan: " + steps + ", run in Act"
	}
	return "The plan: " + steps + ", denied in Plan"
}

// PlanRan reports whether the plan of rows[row] was run: a prompt of
// PlanPrompt's was sent after it, before the next plan.
func PlanRan(rows []Row, row int) bool {
	for _, r := range rows[min(row+1, len(rows)):] {
		switch {
		case r.Kind == RowPlan:
			return false
		case r.Kind == RowUser && IsPlanPrompt(r.Text):
			return true
		}
	}
	return false
}

// IsPlanPrompt reports whether prompt is one of PlanPrompt's.
func IsPlanPrompt(prompt string) bool {
	return strings.HasPrefix(prompt, planPromptHead+"\n")
}

// PlanPrompt is the prompt that asks the agent to carry out exactly the
// chosen steps of its plan, in order.
func PlanPrompt(steps []PlanStep) string {
	var b strings.Builder
	b.WriteString(planPromptHead + "\n")
	for i, p := range steps {
		fmt.Fprintf(&b, "%d. %s", i+1, StepText(p))
		if p.Work.Kind == ToolEdit && len(p.Work.Diff) > 0 {
			b.WriteString(" (the change you proposed)")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// AgentPlanTitle heads the plan an agent reports as it works (ACP's
// plan), which is not a plan card of Plan mode: the window and the
// terminal follow it with " · " and PlanProgress, the page sets the
// progress beside it.
const AgentPlanTitle = "The agent's plan"

// PlanProgress says how far the agent's plan is: "2 of 5 steps done".
func PlanProgress(entries []protocol.PlanEntry) string {
	done := 0
	for _, e := range entries {
		if e.Status == protocol.PlanCompleted {
			done++
		}
	}
	switch len(entries) {
	case 0:
		return "no steps left"
	case 1:
		return fmt.Sprintf("%d of 1 step done", done)
	}
	return fmt.Sprintf("%d of %d steps done", done, len(entries))
}

// PriorityText says an entry of the agent's plan's priority, after its
// text: only a high one is said ("high priority"), for most agents give
// every step a priority and medium or low would be noise. The window
// shows it after the step in bold amber, as the page does its badge.
func PriorityText(priority string) string {
	if priority == "high" {
		return "high priority"
	}
	return ""
}

// PlanMark is the mark of an entry of the agent's plan, for a line of
// text: ✓ done, ▶ in progress, ○ pending (and any status the agent made
// up).
func PlanMark(status string) string {
	switch status {
	case protocol.PlanCompleted:
		return "✓"
	case protocol.PlanInProgress:
		return "▶"
	}
	return "○"
}
