package script

import (
	"encoding/json"
	"testing"
	"time"
)

// The demo's quota resets on the first day of next month, whenever it is
// played: its script was written with a fixed date (1 Dec 2026), which
// the window then showed as "resets 1 Dec" on 7 Dec, a reset in the past
// (and no "at this pace" estimate, which needs a reset to come).
func TestDemoQuotaResetsNextMonth(t *testing.T) {
	demo, err := Demo()
	if err != nil {
		t.Fatal(err)
	}
	template := firstUsage(demo)
	if template == nil {
		t.Fatal("the demo has no usage step")
	}
	for now, want := range map[time.Time]string{
		time.Date(2026, 12, 7, 17, 30, 0, 0, time.UTC):                      "2027-01-01T00:00:00Z",
		time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC):                     "2026-12-01T00:00:00Z",
		time.Date(2027, 3, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600)):     "2027-03-01T00:00:00Z", // 28 Feb 23:30 UTC
		time.Date(2027, 6, 15, 12, 0, 0, 0, time.FixedZone("PDT", -7*3600)): "2027-07-01T00:00:00Z",
	} {
		a := &account{template: template, now: func() time.Time { return now }}
		for turn := range 2 {
			u := a.charge(cloneUsage(*template))
			var snaps map[string]struct {
				ResetDate string  `json:"resetDate"`
				Used      float64 `json:"usedRequests"`
			}
			if err := json.Unmarshal(u.QuotaSnapshots, &snaps); err != nil {
				t.Fatal(err)
			}
			got := snaps["premium_interactions"]
			if got.ResetDate != want {
				t.Errorf("at %s, turn %d: resetDate %q, want %q", now, turn, got.ResetDate, want)
			}
			if got.Used != float64(42+turn) {
				t.Errorf("at %s, turn %d: %v premium requests used, want %d", now, turn, got.Used, 42+turn)
			}
		}
	}
}
