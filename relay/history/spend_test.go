package history_test

import (
	"slices"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// AddSpend keeps a tally of one entry per UTC hour, oldest first: a spend
// of an hour already there adds to it (its At the later of the two), one
// of another hour takes its place in the order, wherever that is.
func TestAddSpend(t *testing.T) {
	h := history.SpendHour(time.Date(2026, 3, 1, 10, 17, 0, 0, time.UTC)) // 10:00
	at := func(d time.Duration) time.Time { return h.Add(d) }
	var tally []history.Spend
	for _, s := range []history.Spend{
		{At: at(20 * time.Minute), NanoAIU: 1},
		{At: at(5 * time.Minute), NanoAIU: 2},                                // same hour, earlier: At stays
		{At: at(2*time.Hour + time.Minute), NanoAIU: 4},                      // a later hour: after it
		{At: at(-time.Hour + 59*time.Minute), NanoAIU: 8},                    // an earlier hour: first
		{At: at(time.Hour + 30*time.Minute), NanoAIU: 16},                    // an hour between: between
		{At: at(2*time.Hour + 50*time.Minute), NanoAIU: 32},                  // same hour, later: At moves
		{At: at(50 * time.Minute).In(time.FixedZone("", 3600)), NanoAIU: 64}, // its UTC hour counts
	} {
		tally = history.AddSpend(tally, s)
	}
	want := []history.Spend{
		{At: at(-time.Minute), NanoAIU: 8},
		{At: at(50 * time.Minute), NanoAIU: 1 + 2 + 64},
		{At: at(time.Hour + 30*time.Minute), NanoAIU: 16},
		{At: at(2*time.Hour + 50*time.Minute), NanoAIU: 4 + 32},
	}
	if !slices.EqualFunc(tally, want, func(a, b history.Spend) bool { return a.At.Equal(b.At) && a.NanoAIU == b.NanoAIU }) {
		t.Fatalf("tally = %v\nwant    %v", tally, want)
	}
}
