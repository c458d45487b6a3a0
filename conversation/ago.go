package conversation

import (
	"fmt"
	"time"
)

// Ago says how long before now t was, as every front end words it: the
// window's device list ("last used 5 min ago"), the terminal's /list and
// the web client's conversation list (words.js's ago, checked against this
// through testdata/words.json).
//
// The wording is a desktop app's, read at a glance: "just now" under a
// minute (and for a time ahead of now: another device's clock), then
// "5 min ago" and "3 h ago" while it is under a day, where the count is
// what is meant; past a day, calendar days in now's time zone, since
// that is how people place it: "yesterday", then "3 days ago" within a
// week; beyond a week a count of days makes the reader do arithmetic,
// so it is the date, "2 Jan", with the year only when it is not this
// year's ("2 Jan 2025"). Month names are fixed English abbreviations, not
// the locale's, like the rest of the words.
func Ago(t, now time.Time) string {
	t = t.In(now.Location())
	switch d := now.Sub(t); {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	}
	switch days := calendarDays(t, now); {
	case days <= 1:
		return "yesterday"
	case days < 7:
		return fmt.Sprintf("%d days ago", days)
	case t.Year() == now.Year():
		return t.Format("2 Jan")
	}
	return t.Format("2 Jan 2006")
}

// calendarDays is how many midnights lie between t and now, counted on
// their dates (both in one location) so that a day of 23 or 25 hours
// (daylight saving) still counts as one.
func calendarDays(t, now time.Time) int {
	y, m, d := t.Date()
	from := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	y, m, d = now.Date()
	to := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return int(to.Sub(from) / (24 * time.Hour))
}
