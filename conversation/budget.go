package conversation

import (
	"fmt"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// periodText words a budget's period: "30 days", "24 hours".
func periodText(seconds int64) string {
	d := time.Duration(seconds) * time.Second
	if d >= 48*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	if d >= time.Hour {
		return fmt.Sprintf("%s hours", Num(d.Hours()))
	}
	return d.String()
}

// BudgetText is the relay's credit budget on one line, the same in every
// front end: "budget: 7.9 of 10 credits spent in 30 days, 2.1 left", or
// once it is spent "budget spent: 10.2 of 10 credits in 30 days, new turns
// from 1 Dec 09:30" (in the reader's time zone of now, as BudgetRefusal).
func BudgetText(b protocol.Budget, now time.Time) string {
	if b.Exceeded() {
		s := fmt.Sprintf("budget spent: %s of %s in %s", Num(b.SpentCredits), CreditsText(b.BudgetCredits), periodText(b.PeriodSeconds))
		if t, err := time.Parse(time.RFC3339, b.ResetsAt); err == nil {
			s += ", new turns from " + t.In(now.Location()).Format("2 Jan 15:04")
		}
		return s
	}
	return fmt.Sprintf("budget: %s of %s spent in %s, %s left",
		Num(b.SpentCredits), CreditsText(b.BudgetCredits), periodText(b.PeriodSeconds), Num(b.Remaining()))
}

// BudgetWarning is said once when the spend reaches 80% of the budget.
func BudgetWarning(b protocol.Budget) string {
	return fmt.Sprintf("%d%% of the credit budget is spent: %s of %s in the last %s.",
		int(protocol.BudgetWarnFraction*100), Num(b.SpentCredits), CreditsText(b.BudgetCredits), periodText(b.PeriodSeconds))
}

// BudgetRefusal says why new turns are refused and what to do, with when
// they start again (in the reader's time zone of now).
func BudgetRefusal(b protocol.Budget, now time.Time) string {
	s := fmt.Sprintf("The credit budget is spent (%s of %s in the last %s): new turns are refused.",
		Num(b.SpentCredits), CreditsText(b.BudgetCredits), periodText(b.PeriodSeconds))
	if t, err := time.Parse(time.RFC3339, b.ResetsAt); err == nil {
		s += " They start again on " + t.In(now.Location()).Format("2 Jan at 15:04") + "."
	}
	return s + " Raise it with --budget-credits or in Settings (Budget)."
}
