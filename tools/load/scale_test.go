package main

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// TestScaleShares: each round's share is its runs of a count taken
// together against its single relay's, and the verdict is the median of
// the rounds: one round far off either way does not decide it.
func TestScaleShares(t *testing.T) {
	r := func(round, relays int, cpu float64, deliveries int64) scaleRun {
		return scaleRun{round: round, relays: relays, res: &result{RelayCPUSeconds: cpu, Deliveries: deliveries}}
	}
	runs := []scaleRun{
		// Round 1: one relay 10 µs per delivery (two runs together), three
		// relays 12 µs: each 0.40.
		r(0, 1, 1.0, 100_000), r(0, 3, 1.2, 100_000), r(0, 3, 2.4, 200_000), r(0, 1, 3.0, 300_000),
		// Round 2: 0.30. Round 3: 0.60.
		r(1, 1, 1.0, 100_000), r(1, 3, 0.9, 100_000), r(1, 3, 0.9, 100_000), r(1, 1, 1.0, 100_000),
		r(2, 1, 1.0, 100_000), r(2, 3, 1.8, 100_000), r(2, 3, 1.8, 100_000), r(2, 1, 1.0, 100_000),
	}
	got := scaleShares(runs, 3)
	want := []float64{0.40, 0.30, 0.60}
	if len(got) != len(want) {
		t.Fatalf("%d rounds, want %d", len(got), len(want))
	}
	var threes []float64
	for i, s := range got {
		if d := s[3] - want[i]; d > 1e-9 || d < -1e-9 || s[1] != 1 {
			t.Errorf("round %d: %v, want 3 relays %.2f", i+1, s, want[i])
		}
		threes = append(threes, s[3])
	}
	if m := median(threes); m < 0.399 || m > 0.401 {
		t.Errorf("median %.3f, want 0.40", m)
	}
	if m := median([]float64{0.5, 0.3}); m != 0.4 {
		t.Errorf("median of two %.2f, want their mean", m)
	}
	if o := scaleOrder(3); !slices.Equal(o, []int{1, 2, 3, 3, 2, 1}) {
		t.Errorf("order %v", o)
	}
}

// TestScaleCutShort: a run that cannot be made ends -scale with its error,
// and what the runs before it measured is printed all the same (a failure
// in a third round had thrown the first two away).
func TestScaleCutShort(t *testing.T) {
	refused := errors.New("connection 138: before its subscription: EOF")
	calls := 0
	fake := func(_ context.Context, c config, _ *slog.Logger) (*result, error) {
		calls++
		if calls == 8 {
			return nil, refused
		}
		// The relays' CPU together: 10 µs per delivery for one relay,
		// 4 µs for each of three.
		cpu := map[int]float64{1: 1.0, 2: 1.2, 3: 1.2}[c.Relays]
		return &result{RelayCPUSeconds: cpu, Deliveries: 100_000}, nil
	}
	var out strings.Builder
	cfg := config{Rounds: 3, Relays: 3}
	failed, err := scaleWith(context.Background(), cfg, slog.New(slog.DiscardHandler), &out, fake)
	if !failed || !errors.Is(err, refused) {
		t.Fatalf("failed %v, err %v; want the run's error", failed, err)
	}
	if calls != 8 {
		t.Errorf("%d runs made; want none after the one that could not be made", calls)
	}
	got := out.String()
	for _, want := range []string{
		"cut short by a run that could not be made",
		"what the 7 runs before it measured",
		"scale: 3 relays: each needs 0.40 of one relay's CPU per delivery (median of 1 round(s): 0.40)",
		"the median of 1 round(s) (target <= 0.38: MISSED; met in 0 of 1 rounds)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, got)
		}
	}
}
