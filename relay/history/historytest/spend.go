package historytest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// The ledger's checks run for stores that are a history.Ledger and are
// skipped for the others.

func ledger(t *testing.T, s history.Store) history.Ledger {
	t.Helper()
	l, ok := s.(history.Ledger)
	if !ok {
		t.Skipf("%T keeps no spend (not a history.Ledger)", s)
	}
	return l
}

// hourStart is the start of the UTC hour of base: spends relative to it
// fall in known hours.
var hourStart = history.SpendHour(base)

func spent(t *testing.T, l history.Ledger, since time.Time) string {
	t.Helper()
	entries, err := l.Spent(context.Background(), since)
	if err != nil {
		t.Fatalf("Spent(%v): %v", since, err)
	}
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%s=%d ", e.At.UTC().Format(time.RFC3339Nano), e.NanoAIU)
	}
	return strings.TrimSpace(b.String())
}

func spendAt(d time.Duration, nano int64) history.Spend {
	return history.Spend{At: hourStart.Add(d), NanoAIU: nano}
}

func at(d time.Duration) string { return hourStart.Add(d).Format(time.RFC3339Nano) }

// testSpendByHour: spends of one UTC hour make one entry, their sum at the
// latest of their times, whichever order and batch they came in; entries
// come oldest first, and nanoseconds are kept.
func testSpendByHour(t *testing.T, s history.Store) {
	l := ledger(t, s)
	if got := spent(t, l, time.Time{}); got != "" {
		t.Fatalf("a new store has spent %s", got)
	}
	write(t, s, history.Batch{
		Conversations: []history.Conversation{conv("a", 0)},
		Events:        events("a", 1, 2),
		Spend:         []history.Spend{spendAt(2*time.Hour+5, 7), spendAt(10*time.Minute+1, 1_500_000_000), spendAt(50*time.Minute+3, 250_000_000)},
	})
	write(t, s, history.Batch{Spend: []history.Spend{spendAt(30*time.Minute, 1), spendAt(-time.Minute, 9)}})
	want := fmt.Sprintf("%s=9 %s=1750000001 %s=7", at(-time.Minute), at(50*time.Minute+3), at(2*time.Hour+5))
	if got := spent(t, l, time.Time{}); got != want {
		t.Fatalf("Spent:\n got %s\nwant %s", got, want)
	}
}

// testSpendSince: Spent leaves out the entries whose latest spend is before
// since, and keeps the one exactly at since.
func testSpendSince(t *testing.T, s history.Store) {
	l := ledger(t, s)
	write(t, s, history.Batch{Spend: []history.Spend{
		spendAt(-25*time.Hour, 1), spendAt(10*time.Minute, 2), spendAt(20*time.Minute, 3), spendAt(3*time.Hour, 4),
	}})
	for _, c := range []struct {
		since time.Time
		want  string
	}{
		{time.Time{}, fmt.Sprintf("%s=1 %s=5 %s=4", at(-25*time.Hour), at(20*time.Minute), at(3*time.Hour))},
		{hourStart.Add(-24 * time.Hour), fmt.Sprintf("%s=5 %s=4", at(20*time.Minute), at(3*time.Hour))},
		// An hour counts while its latest spend does.
		{hourStart.Add(15 * time.Minute), fmt.Sprintf("%s=5 %s=4", at(20*time.Minute), at(3*time.Hour))},
		{hourStart.Add(20 * time.Minute), fmt.Sprintf("%s=5 %s=4", at(20*time.Minute), at(3*time.Hour))},
		{hourStart.Add(20*time.Minute + 1), at(3*time.Hour) + "=4"},
		{hourStart.Add(4 * time.Hour), ""},
	} {
		if got := spent(t, l, c.since); got != c.want {
			t.Errorf("Spent(%v):\n got %s\nwant %s", c.since, got, c.want)
		}
	}
}

// testSpendAtomic: a batch that fails stores none of its spend.
func testSpendAtomic(t *testing.T, s history.Store) {
	l := ledger(t, s)
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0)}, Events: events("a", 1, 2), Spend: []history.Spend{spendAt(0, 5)}})
	failingWrite(t, s, history.Batch{Events: []history.Event{event("a", 2)}, Spend: []history.Spend{spendAt(time.Minute, 100), spendAt(2*time.Hour, 100)}}, "a")
	if got, want := spent(t, l, time.Time{}), at(0)+"=5"; got != want {
		t.Fatalf("after a failed write: %s, want %s", got, want)
	}
}

// testSpendOutlivesConversations: spend is not the conversations': deleting
// them, one by one or by age, leaves it.
func testSpendOutlivesConversations(t *testing.T, s history.Store) {
	l := ledger(t, s)
	write(t, s, history.Batch{
		Conversations: []history.Conversation{conv("a", -48*time.Hour), conv("b", 0)},
		Events:        append(events("a", 1, 3), events("b", 1, 3)...),
		Spend:         []history.Spend{spendAt(0, 11), spendAt(time.Hour, 22)},
	})
	if err := s.Delete(context.Background(), "b"); err != nil {
		t.Fatal(err)
	}
	if d, ok := s.(OlderThanDeleter); ok {
		if _, err := d.DeleteOlderThan(context.Background(), base); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := spent(t, l, time.Time{}), fmt.Sprintf("%s=11 %s=22", at(0), at(time.Hour)); got != want {
		t.Fatalf("after deleting the conversations: %s, want %s", got, want)
	}
}
