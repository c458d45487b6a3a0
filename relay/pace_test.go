package relay_test

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// quotaPace runs "four" (4 credits) in conversation id and returns the
// creditsPerDay of its copilot:quota.
func quotaPace(t *testing.T, cl *relaytest.Client, id string) float64 {
	t.Helper()
	var q protocol.Quota
	for _, f := range runTurn(t, cl, id, "four") {
		if f.Type == protocol.TypeQuota {
			f.Decode(t, &q)
		}
	}
	if q.CreditsPerDay == nil {
		t.Fatalf("copilot:quota in %s without creditsPerDay", id)
	}
	return *q.CreditsPerDay
}

// creditsPerDay is the relay's pace from its ledger: every conversation's
// spend counts, a restart on the same data dir keeps it, and a first day
// counts as a day.
func TestPaceFromTheLedgerAcrossConversationsAndRestart(t *testing.T) {
	checkNoLeaks(t)
	dir := t.TempDir()
	open := func() (*relaytest.Server, history.Store) {
		st, err := sqlite.Open(context.Background(), dir, sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return relaytest.Start(t, relay.Config{Agent: budgetAgent(t), Store: st}), st
	}
	srv, st := open()
	cl := srv.Dial(t)
	if p := quotaPace(t, cl, "a"); p != 4 {
		t.Fatalf("after 4 credits in the first hour: %v a day, want 4 (a day at least)", p)
	}
	if p := quotaPace(t, cl, "b"); p != 8 {
		t.Fatalf("after 4 more in another conversation: %v a day, want 8", p)
	}
	srv.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	srv, st = open()
	defer st.Close()
	defer srv.Close()
	if p := quotaPace(t, srv.Dial(t), "c"); p != 12 {
		t.Fatalf("after a restart: %v a day, want 12", p)
	}
	// A free turn reports no credits, and no pace.
	for _, f := range runTurn(t, srv.Dial(t), "d", "hello") {
		if f.Type == protocol.TypeQuota {
			t.Fatalf("a free turn reported usage: %s", f.Raw)
		}
	}
}

// The pace looks back protocol.PaceWindow: spend older than that does not
// count, and spend younger than it is spread over the time since it.
func TestPaceWindow(t *testing.T) {
	checkNoLeaks(t)
	now := time.Now()
	for _, tc := range []struct {
		name  string
		spend []history.Spend
		lo    float64
		hi    float64
	}{
		// 6 three days ago and 4 now: 10 over three days (and at most the
		// hour the first spend's hour began before it).
		{"younger than the window", []history.Spend{{At: now.Add(-72 * time.Hour), NanoAIU: 6e9}}, 10 / 3.05, 10 / 3.0},
		// 5 ten days ago does not count; the window is a week.
		{"older than the window", []history.Spend{{At: now.Add(-240 * time.Hour), NanoAIU: 5e9}, {At: now.Add(-72 * time.Hour), NanoAIU: 6e9}}, 10.0 / 7, 10.0 / 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := history.NewMemory()
			if err := store.Write(context.Background(), history.Batch{Spend: tc.spend}); err != nil {
				t.Fatal(err)
			}
			srv := relaytest.Start(t, relay.Config{Agent: budgetAgent(t), Store: store})
			p := quotaPace(t, srv.Dial(t), "a")
			if p < tc.lo-1e-9 || p > tc.hi+1e-9 || math.IsNaN(p) {
				t.Fatalf("%v a day, want %v to %v", p, tc.lo, tc.hi)
			}
		})
	}
}
