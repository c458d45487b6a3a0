package main

import (
	"testing"
	"time"
)

// A gap between two frames drops the ticks it holds beyond two, counted
// to the nearest tick.
func TestDroppedIn(t *testing.T) {
	for _, c := range []struct {
		gap  time.Duration
		want int
	}{
		{16 * time.Millisecond, 0},
		{17 * time.Millisecond, 0},
		{33 * time.Millisecond, 0},
		{34 * time.Millisecond, 0}, // two ticks, stamped in whole ms
		{39 * time.Millisecond, 0}, // two ticks, the second frame slower
		{42 * time.Millisecond, 1}, // nearer three ticks
		{50 * time.Millisecond, 1},
		{67 * time.Millisecond, 2},
		{100 * time.Millisecond, 4},
	} {
		if got := droppedIn(c.gap); got != c.want {
			t.Errorf("droppedIn(%v) = %d, want %d", c.gap, got, c.want)
		}
	}
}
