package protocol

import "testing"

// copilot:budget decodes through the table of server messages, and its
// helpers say what a client shows.
func TestBudget(t *testing.T) {
	ev, err := DecodeEvent([]byte(`{"type":"copilot:budget","data":{"budgetCredits":10,"spentCredits":8.5,"periodSeconds":2592000,"serverTime":"2026-11-24T12:00:00.000Z"}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, ok := ev.Data.(*Budget)
	if !ok || ev.ConversationID() != "" || ev.Seq() != 0 {
		t.Fatalf("decoded %T %+v", ev.Data, ev)
	}
	if b.Remaining() != 1.5 || !b.Warn() || b.Exceeded() || b.PeriodSeconds != 2592000 {
		t.Fatalf("%+v: remaining %v, warn %v, exceeded %v", b, b.Remaining(), b.Warn(), b.Exceeded())
	}
	for _, c := range []struct {
		spent          float64
		warn, exceeded bool
		remaining      float64
	}{{0, false, false, 10}, {7.9, false, false, 2.1}, {8, true, false, 2}, {10, true, true, 0}, {12, true, true, 0}} {
		b := Budget{BudgetCredits: 10, SpentCredits: c.spent}
		if b.Warn() != c.warn || b.Exceeded() != c.exceeded || b.Remaining() != c.remaining {
			t.Errorf("spent %v of 10: warn %v exceeded %v remaining %v", c.spent, b.Warn(), b.Exceeded(), b.Remaining())
		}
	}
}
