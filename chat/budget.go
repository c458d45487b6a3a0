package chat

import (
	"time"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// budgetNotes says the relay's credit budget the way the window does: a
// warning once when 80% of it is spent, the refusal once when it is
// spent, both armed again once it falls back (a new period, a raised
// budget). While a turn runs what it would say waits for the turn's end,
// so that it follows the turn's usage line whichever of the relay's
// budget broadcast and the turn's end comes first. Like all of repl's
// state it belongs to the loop goroutine.
type budgetNotes struct {
	warned, spentShown bool
	// afterTurn is the budget that changed while a turn ran, said once
	// the turn has ended (turnEnded).
	afterTurn *protocol.Budget
}

// changed takes the relay's budget b; running says that a turn runs.
// It returns what to say now, if anything (text "" when nothing).
func (n *budgetNotes) changed(b *protocol.Budget, running bool, now time.Time) (style, text string) {
	if running {
		n.afterTurn = b
		return "", ""
	}
	switch {
	case b.Exceeded():
		if !n.spentShown {
			n.spentShown, n.warned = true, true
			return styleError, conversation.BudgetRefusal(*b, now)
		}
	case b.Warn():
		n.spentShown = false
		if !n.warned {
			n.warned = true
			return styleWarn, conversation.BudgetWarning(*b) + " " + conversation.BudgetText(*b, now) + "."
		}
	default:
		n.spentShown, n.warned = false, false
	}
	return "", ""
}

// turnEnded returns what waited for the turn's end, as changed does.
func (n *budgetNotes) turnEnded(now time.Time) (style, text string) {
	b := n.afterTurn
	if b == nil {
		return "", ""
	}
	n.afterTurn = nil
	return n.changed(b, false, now)
}

// budgetChanged says what the budget b calls for (budgetNotes.changed).
func (r *repl) budgetChanged(b *protocol.Budget) {
	r.sayBudget(r.budget.changed(b, r.running, r.cfg.Now()))
}

func (r *repl) sayBudget(style, text string) {
	if text == "" {
		return
	}
	r.scr.endLine()
	r.note(style, text)
}
