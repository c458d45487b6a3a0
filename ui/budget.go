package ui

import (
	"time"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// budgetGuard shows the relay's credit budget in the status bar, warns
// once when 80% of it is spent, and says once, in full, when it is spent
// and why Send is off until it is raised; it then tells the window that
// new prompts would be refused. A budget that falls back below 80% (a new
// period, a raised budget) arms both sayings again. It belongs to the UI
// goroutine.
type budgetGuard struct {
	status *statusBar
	// note adds a note to the conversation shown.
	note func(tone, text string)

	// budget is the budget as last shown (nil: none); warned says that
	// the 80% warning was given, spentSaid that the refusal was.
	budget    *protocol.Budget
	warned    bool
	spentSaid bool
}

// show shows b, as the relay sent it at now (nil: no budget).
func (g *budgetGuard) show(b *protocol.Budget, now time.Time) {
	g.budget = b
	if b == nil {
		g.status.setBudget("", false)
		return
	}
	g.status.setBudget(conversation.BudgetText(*b, now), b.Exceeded())
	switch {
	case b.Exceeded():
		if !g.spentSaid {
			// Once, in full: why Send is off and how to raise the budget.
			g.spentSaid, g.warned = true, true
			g.note(conversation.NoteError, conversation.BudgetRefusal(*b, now))
		}
	case b.Warn() && !g.warned:
		g.warned = true
		g.note(conversation.NoteWarn, conversation.BudgetWarning(*b))
	case !b.Warn():
		g.warned, g.spentSaid = false, false // a later climb warns again
	}
	if !b.Exceeded() {
		g.spentSaid = false
	}
}

// spent says whether the budget is spent: the relay refuses new turns.
func (g *budgetGuard) spent() bool { return g.budget != nil && g.budget.Exceeded() }

// refusal says why a prompt is not sent while the budget is spent.
func (g *budgetGuard) refusal(now time.Time) string {
	return conversation.BudgetRefusal(*g.budget, now)
}
