package conversation

import (
	"testing"
	"time"
)

// TestAgoCountsDaysInNowsZone: past a day, Ago counts the calendar days
// of now's time zone, not UTC's (the cases of testdata/words.json are all
// in UTC, as the web test's clock is): 27 h before 01:00 on the 20th at
// UTC+2 is 22:00 on the 18th there, two days, though it was the 19th's
// evening and the 18th's in UTC.
func TestAgoCountsDaysInNowsZone(t *testing.T) {
	t.Parallel()
	zone := time.FixedZone("UTC+2", 2*60*60)
	now := time.Date(2026, 11, 20, 1, 0, 0, 0, zone)
	then := time.Date(2026, 11, 18, 20, 0, 0, 0, time.UTC)
	if got := Ago(then, now); got != "2 days ago" {
		t.Errorf("Ago(%v, %v) = %q, want 2 days ago", then, now, got)
	}
	if got := Ago(then, now.UTC()); got != "yesterday" {
		t.Errorf("Ago(%v, %v) = %q, want yesterday", then, now.UTC(), got)
	}
}
