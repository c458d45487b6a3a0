package script

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/session"
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

// usedOf is what a usage report says of the premium requests used.
func usedOf(t *testing.T, u session.Usage) float64 {
	t.Helper()
	var snaps map[string]struct {
		Used float64 `json:"usedRequests"`
	}
	if err := json.Unmarshal(u.QuotaSnapshots, &snaps); err != nil {
		t.Fatal(err)
	}
	return snaps["premium_interactions"].Used
}

// The demo's premium requests used go on from where they were after a
// restart (a new account on the same file), within the month, and start
// again at the script's figure in a new month; an unreadable file is
// counted from the script's figure, not an error.
func TestDemoAccountKeptAcrossRestarts(t *testing.T) {
	demo, err := Demo()
	if err != nil {
		t.Fatal(err)
	}
	template := firstUsage(demo)
	file := filepath.Join(t.TempDir(), "demo-account.json")
	now := time.Date(2026, 12, 7, 17, 30, 0, 0, time.UTC)
	start := func() *account {
		a := &account{template: template, now: func() time.Time { return now }, file: file, log: slog.New(slog.DiscardHandler)}
		a.load()
		return a
	}
	a := start()
	for turn := range 3 {
		if got := usedOf(t, a.charge(cloneUsage(*template))); got != float64(42+turn) {
			t.Fatalf("turn %d: %v used, want %d", turn, got, 42+turn)
		}
	}
	a = start() // the app restarted
	if got := usedOf(t, a.charge(cloneUsage(*template))); got != 45 {
		t.Fatalf("after a restart: %v used, want 45 (44 before, and this turn)", got)
	}
	now = time.Date(2027, 1, 2, 9, 0, 0, 0, time.UTC)
	a = start()
	if got := usedOf(t, a.charge(cloneUsage(*template))); got != 42 {
		t.Fatalf("in the next month: %v used, want the script's 42", got)
	}
	if got := usedOf(t, a.charge(cloneUsage(*template))); got != 43 {
		t.Fatalf("in the next month, a second turn: %v used, want 43", got)
	}
	if err := os.WriteFile(file, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	a = start()
	if got := usedOf(t, a.charge(cloneUsage(*template))); got != 42 {
		t.Fatalf("with an unreadable file: %v used, want the script's 42", got)
	}
}
