package conversation

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// The pace of a quota counted in credits is the relay's creditsPerDay
// (its stored spend of the last week), not the quota's own average since
// the month began; a quota counted in requests keeps its own average; the
// usage bar's line and the terminal's say the same.
func TestPaceFollowsTheRelaysSpend(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	snaps := func(credits bool) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"premium_interactions": map[string]any{
			"isUnlimitedEntitlement": false, "entitlementRequests": 1000, "usedRequests": 400, "remainingPercentage": 60,
			"resetDate": "2026-12-01T00:00:00Z", "tokenBasedBilling": credits}})
		return b
	}
	rate := func(r float64) *float64 { return &r }
	one := func(credits bool, perDay *float64) Usage {
		st := New("c", Options{})
		c := 3.0
		st.Apply(ev(protocol.TypeQuota, &protocol.Quota{Header: protocol.Header{ConversationID: "c", Seq: 1}, Model: "gpt-5",
			QuotaSnapshots: snaps(credits), AICredits: &c, CreditsPerDay: perDay}))
		return st.Usage
	}

	// 400 of 1000 used in 19.5 days: at that average it lasts the month.
	u := one(true, nil)
	if p := Pace(u.Quotas[0], u.CreditsPerDay, now); p != "" {
		t.Fatalf("the month's average: %q, want it to last", p)
	}
	// The relay spent 100 credits a day this week: 600 left last 6 days.
	u = one(true, rate(100))
	if p := Pace(u.Quotas[0], u.CreditsPerDay, now); p != "at this pace it runs out on 26 Nov" {
		t.Fatalf("at 100 a day: %q", p)
	}
	if line := UsageText(u, u, now); !strings.Contains(line, "resets 1 Dec · at this pace it runs out on 26 Nov") {
		t.Fatalf("usage bar: %s", line)
	}
	if line := TurnText(u, u, now); !strings.Contains(line, "at this pace it runs out on 26 Nov") {
		t.Fatalf("terminal: %s", line)
	}
	// Requests are not credits: the relay's figure says nothing of them.
	u = one(false, rate(100))
	if p := Pace(u.Quotas[0], u.CreditsPerDay, now); p != "" {
		t.Fatalf("a quota in requests at the relay's credit pace: %q", p)
	}
	// Used up is used up.
	u = one(true, rate(1))
	u.Quotas[0].Used = 1000
	if p := Pace(u.Quotas[0], u.CreditsPerDay, now); p != "used up" {
		t.Fatalf("used up: %q", p)
	}
}
