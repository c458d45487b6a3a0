package conversation

import (
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

func TestBudgetWords(t *testing.T) {
	b := protocol.Budget{BudgetCredits: 10, SpentCredits: 7.9, PeriodSeconds: 30 * 24 * 3600}
	utc := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	if got, want := BudgetText(b, utc), "budget: 7.9 of 10 credits spent in 30 days, 2.1 left"; got != want {
		t.Errorf("BudgetText = %q, want %q", got, want)
	}
	if got, want := BudgetWarning(b), "80% of the credit budget is spent: 7.9 of 10 credits in the last 30 days."; got != want {
		t.Errorf("BudgetWarning = %q", got)
	}
	b.SpentCredits, b.ResetsAt = 10.2, "2026-12-01T09:30:00Z"
	want := "The credit budget is spent (10.2 of 10 credits in the last 30 days): new turns are refused. They start again on 1 Dec at 09:30. Raise it with --budget-credits or in Settings (Budget)."
	if got := BudgetRefusal(b, utc); got != want {
		t.Errorf("BudgetRefusal =\n%q\nwant\n%q", got, want)
	}
	// In the reader's zone: 09:30 UTC is 18:30 in Tokyo.
	tokyo := time.FixedZone("JST", 9*3600)
	if got, want := BudgetText(b, utc.In(tokyo)), "budget spent: 10.2 of 10 credits in 30 days, new turns from 1 Dec 18:30"; got != want {
		t.Errorf("BudgetText = %q, want %q", got, want)
	}
	if got := periodText(24 * 3600); got != "24 hours" {
		t.Errorf("a day is %q", got)
	}
}
