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
		return scaleRun{round: round, relays: relays, placement: placeSpread, res: &result{RelayCPUSeconds: cpu, Deliveries: deliveries}}
	}
	runs := []scaleRun{
		// Round 1: one relay 10 µs per delivery (two runs together), three
		// relays 12 µs: each 0.40.
		r(0, 1, 1.0, 100_000), r(0, 3, 1.2, 100_000), r(0, 3, 2.4, 200_000), r(0, 1, 3.0, 300_000),
		// Round 2: 0.30. Round 3: 0.60.
		r(1, 1, 1.0, 100_000), r(1, 3, 0.9, 100_000), r(1, 3, 0.9, 100_000), r(1, 1, 1.0, 100_000),
		r(2, 1, 1.0, 100_000), r(2, 3, 1.8, 100_000), r(2, 3, 1.8, 100_000), r(2, 1, 1.0, 100_000),
	}
	got := scaleShares(runs, 3, placeSpread)
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
	if o := scaleOrder(3, []string{placeSpread}); !slices.Equal(o, []scaleStep{{1, placeSpread}, {2, placeSpread}, {3, placeSpread}, {3, placeSpread}, {2, placeSpread}, {1, placeSpread}}) {
		t.Errorf("order %v", o)
	}
	both := []scaleStep{{1, placeSpread}, {2, placeSpread}, {2, placeOwner}, {3, placeSpread}, {3, placeOwner}, {3, placeOwner}, {3, placeSpread}, {2, placeOwner}, {2, placeSpread}, {1, placeOwner}}
	if o := scaleOrder(3, scalePlacements(placeBoth)); !slices.Equal(o, both) {
		t.Errorf("order with both placements %v, want %v", o, both)
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
		"scale: 3 relays, clients spread: each needs 0.40 of one relay's CPU per delivery (median of 1 round(s): 0.40)",
		"scale: with 3 relays, clients spread, each needs 0.40 of one relay's CPU per delivery, the median of 1 round(s) (target <= 0.38: MISSED; met in 0 of 1 rounds)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, got)
		}
	}
}

// TestScaleBothPlacements: with -placement both every count above one runs
// in each placement, and each placement's share is its own runs' against
// the same single relay's, printed side by side with a verdict each.
func TestScaleBothPlacements(t *testing.T) {
	var made []scaleStep
	fake := func(_ context.Context, c config, _ *slog.Logger) (*result, error) {
		made = append(made, scaleStep{c.Relays, c.Placement})
		// 10 µs per delivery on one relay; each of three 4.5 µs spread
		// (following costs), 3.5 µs with the clients on the owner.
		cpu := 1.0
		switch {
		case c.Relays == 3 && c.Placement == placeSpread:
			cpu = 1.35
		case c.Relays == 3:
			cpu = 1.05
		case c.Relays == 2:
			cpu = 1.2
		}
		return &result{RelayCPUSeconds: cpu, Deliveries: 100_000}, nil
	}
	var out strings.Builder
	cfg := config{Rounds: 1, Relays: 3, Placement: placeBoth, Conns: 150, Convs: 15}
	failed, err := scaleWith(context.Background(), cfg, slog.New(slog.DiscardHandler), &out, fake)
	if failed || err != nil {
		t.Fatalf("failed %v, err %v", failed, err)
	}
	if want := scaleOrder(3, []string{placeSpread, placeOwner}); !slices.Equal(made, want) {
		t.Errorf("runs made %v, want %v", made, want)
	}
	got := out.String()
	for _, want := range []string{
		"clients spread on 3 relays: 90 of the 150 connections on a relay that does not own their conversation",
		"clients owner  on 3 relays: 0 of the 150 connections",
		"scale: with 3 relays, clients spread, each needs 0.45 of one relay's CPU per delivery, the median of 1 round(s) (target <= 0.38: MISSED; met in 0 of 1 rounds)",
		"scale: with 3 relays, clients owner, each needs 0.35 of one relay's CPU per delivery, the median of 1 round(s) (target <= 0.38: met; met in 1 of 1 rounds)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, got)
		}
	}
}

// TestPlacement: spread puts a conversation's connections on every relay,
// its sender (the owner) first, whatever -convs is against -relays; owner
// puts them all on the sender's; conn is connection i on relay i mod
// relays, which for 15 conversations on 3 relays is owner's.
func TestPlacement(t *testing.T) {
	const conns, convs, relays = 150, 15, 3
	perRelay := map[int]int{}
	for conv := range convs {
		on := map[int]int{}
		for i := conv; i < conns; i += convs {
			h := homeOf(placeSpread, i, convs, relays)
			on[h]++
			perRelay[h]++
			if o := homeOf(placeOwner, i, convs, relays); o != conv%relays {
				t.Errorf("owner: connection %d of conversation %d on relay %d, want %d", i, conv, o, conv%relays)
			}
			if c := homeOf(placeConn, i, convs, relays); c != i%relays {
				t.Errorf("conn: connection %d on relay %d", i, c)
			}
		}
		if homeOf(placeSpread, conv, convs, relays) != conv%relays {
			t.Errorf("spread: the sender of conversation %d not on its relay", conv)
		}
		if len(on) != relays || on[conv%relays] != 4 {
			t.Errorf("spread: conversation %d's 10 connections on relays %v, want 4 on its owner and 3 on each other", conv, on)
		}
	}
	if perRelay[0] != 50 || perRelay[1] != 50 || perRelay[2] != 50 {
		t.Errorf("spread: connections per relay %v, want 50 each", perRelay)
	}
	for _, c := range []struct {
		placement string
		want      int
	}{{placeSpread, 90}, {placeOwner, 0}, {placeConn, 0}} {
		if off, all := following(c.placement, conns, convs, relays); off != c.want || all != conns {
			t.Errorf("%s: %d of %d connections follow, want %d", c.placement, off, all, c.want)
		}
	}
	if err := validPlacement(placeBoth, false); err == nil {
		t.Errorf("-placement both without -scale accepted")
	}
	if err := validPlacement("random", true); err == nil {
		t.Errorf("-placement random accepted")
	}
}
