package main

import (
	"bytes"
	"log/slog"
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

// parseLoaded reads the window's "conversation loaded" line as slog's text
// handler writes it (cli's logger), among the log's other lines.
func TestParseLoaded(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	log.Info("relay started", "addr", "127.0.0.1:1")
	if _, ok, err := parseLoaded(buf.Bytes()); ok || err != nil {
		t.Fatalf("found a line in %q (%v)", buf.String(), err)
	}
	at := time.Date(2026, 12, 7, 12, 0, 0, 123456000, time.UTC)
	log.Info("conversation loaded", "conversation", "c-1", "rows", 5000, "took", 412*time.Millisecond, "shownAtMicros", at.UnixMicro())
	l, ok, err := parseLoaded(buf.Bytes())
	if !ok || err != nil || !l.at.Equal(at) || l.took != 412*time.Millisecond || l.rows != 5000 {
		t.Fatalf("parseLoaded(%q) = %+v, %v, %v", buf.String(), l, ok, err)
	}
}
