package chat

import (
	"slices"
	"strings"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// What an agent reports besides its reply (agents of the ACP backend do):
// its reasoning and its plan. A terminal cannot fold a row away or update
// one in place, so:
//
//   - a run of reasoning is one dim line, "✻ Thought: " and its start, said
//     once the run is over (when anything else of the conversation comes),
//     as the window shows it collapsed;
//   - the plan is printed whole when it first comes or its steps change,
//     and after that only the steps whose status changed.

// agentRows is what the REPL printed of the agent's reasoning and plan. It
// belongs to the REPL's loop, as the fold does.
type agentRows struct {
	thought    bool                 // a run of reasoning is waiting to be printed
	thoughtRow int                  // its row in the fold
	plan       []protocol.PlanEntry // the plan as printed last
	planRow    int                  // and its row in the fold (a new turn's plan has another)
}

// reasoning notes the run of reasoning the fold just changed.
func (r *repl) reasoning(u conversation.Update) {
	for _, i := range u.Rows {
		if r.fold.Rows[i].Kind != conversation.RowReasoning {
			continue
		}
		if r.agent.thought && r.agent.thoughtRow != i {
			r.flushThought() // another run began: the last one is over
		}
		r.agent.thought, r.agent.thoughtRow = true, i
	}
}

// flushThought prints the run of reasoning waiting, if any.
func (r *repl) flushThought() {
	a := &r.agent
	if !a.thought {
		return
	}
	a.thought = false
	if r.fold == nil || a.thoughtRow >= len(r.fold.Rows) || r.fold.Rows[a.thoughtRow].Kind != conversation.RowReasoning {
		return
	}
	width := max(20, r.cfg.Term.width()-len("✻ Thought: ")-1)
	r.scr.endLine()
	// One line: the run's words, its line breaks as spaces, cut to fit.
	text := strings.Join(strings.Fields(r.fold.Rows[a.thoughtRow].Text), " ")
	r.note(styleDim, "✻ Thought: "+sanitize(conversation.OneLine(text, width)))
	r.lastMsgID = ""
}

// agentPlan prints the agent's plan: whole when it or its steps are new,
// else the steps whose status changed.
func (r *repl) agentPlan(d *protocol.Plan, u conversation.Update) {
	a := &r.agent
	row := -1
	for _, i := range u.Rows {
		if r.fold.Rows[i].Kind == conversation.RowAgentPlan {
			row = i
		}
	}
	if row < 0 {
		return // the fold shows no plan (an empty one, with none before it)
	}
	sameSteps := a.plan != nil && row == a.planRow && len(a.plan) == len(d.Entries)
	for i := 0; sameSteps && i < len(d.Entries); i++ {
		sameSteps = a.plan[i].Content == d.Entries[i].Content
	}
	r.scr.endLine()
	if !sameSteps {
		r.note(styleBold, conversation.AgentPlanTitle+" · "+conversation.PlanProgress(d.Entries))
		for _, e := range d.Entries {
			r.planStep(e, false)
		}
	} else {
		for i, e := range d.Entries {
			if e.Status != a.plan[i].Status {
				r.planStep(e, true)
			}
		}
	}
	a.plan, a.planRow = slices.Clone(d.Entries), row
	if a.plan == nil {
		a.plan = []protocol.PlanEntry{}
	}
	r.lastMsgID = ""
}

// planStep prints one step of the plan, with its new status when only
// that changed.
func (r *repl) planStep(e protocol.PlanEntry, changed bool) {
	style := ""
	switch e.Status {
	case protocol.PlanCompleted:
		style = styleOK
	case protocol.PlanInProgress:
		style = styleInfo
	}
	line := "  " + conversation.PlanMark(e.Status) + " " + oneLine(e.Content)
	if changed {
		switch e.Status {
		case protocol.PlanCompleted:
			line += " — done"
		case protocol.PlanInProgress:
			line += " — in progress"
		default:
			line += " — " + sanitize(e.Status)
		}
	}
	r.note(style, line)
}
