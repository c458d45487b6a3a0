package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
)

// scaleTarget is issue #32's: with the same offered load spread over three
// relays, each needs at most 0.38 of the single relay's CPU (three relays
// carry at least 2.6 times one relay's load).
const scaleTarget = 0.38

// scaleRun is one relay count's run of -scale.
type scaleRun struct {
	round     int // from 0
	relays    int
	placement string // which relays the connections went to (one relay: any)
	res       *result
}

// scaleStep is one run of a round: how many relays, and the placement of
// the connections over them.
type scaleStep struct {
	relays    int
	placement string
}

// scaleOrder is the runs of one round: the relay counts up, then down
// again (1, 2, 3, 3, 2, 1), so that a machine that others load unevenly
// weighs on every count alike; a count above one is run in each of
// placements (in order going up, in reverse coming down), the single
// relay once each way, since placements are alike on one relay.
func scaleOrder(relays int, placements []string) []scaleStep {
	var order []scaleStep
	add := func(n int, ps []string) {
		if n == 1 {
			order = append(order, scaleStep{1, ps[0]})
			return
		}
		for _, p := range ps {
			order = append(order, scaleStep{n, p})
		}
	}
	for n := 1; n <= relays; n++ {
		add(n, placements)
	}
	down := slices.Clone(placements)
	slices.Reverse(down)
	for n := relays; n >= 1; n-- {
		add(n, down)
	}
	return order
}

// runScale runs the same load (-conns, -convs, -duration, the same agent)
// on 1, 2, … -relays relays sharing a 3-node cluster, each count a run of
// its own (a fresh cluster, no fault), in one invocation: -rounds rounds of
// the counts up, then down again, each count above one in -placement's
// placements (spread, owner, or both). It prints each run, then, per
// placement, each relay's CPU per delivery as a share of the single
// relay's: per round, from the round's two runs of each count together
// (the runs deliver nearly, not exactly, the same), and the median of the
// rounds, which decides the verdict (one round on a machine others share can be far off either
// way). Any run that loses or repeats a delivery fails it. A run that
// cannot be made (a relay that would not start, a connection refused)
// ends the invocation, after what the runs before it measured is printed:
// a failure in the last round of three lost the other two.
func runScale(ctx context.Context, cfg config, log *slog.Logger, w io.Writer) (failed bool, err error) {
	return scaleWith(ctx, cfg, log, w, run)
}

// scaleWith is runScale with the function that makes one run.
func scaleWith(ctx context.Context, cfg config, log *slog.Logger, w io.Writer, run func(context.Context, config, *slog.Logger) (*result, error)) (failed bool, err error) {
	rounds := max(cfg.Rounds, 1)
	placements := scalePlacements(cmp.Or(cfg.Placement, placeSpread))
	var runs []scaleRun
	var runErr error
	k := 0
rounds:
	for round := range rounds {
		for _, step := range scaleOrder(cfg.Relays, placements) {
			if ctx.Err() != nil {
				break rounds
			}
			k++
			n := step.relays
			c := cfg
			c.Relays, c.IdleRelays, c.KillAt, c.Fault, c.Placement = n, 0, 0, faultNone, step.placement
			c.profileTag = fmt.Sprintf("run%d-relays%d-", k, n)
			log.Info("load: scale run", "round", round+1, "relays", n, "placement", step.placement)
			res, err := run(ctx, c, log)
			if err != nil {
				runErr = fmt.Errorf("the run on %d relays (clients %s): %w", n, step.placement, err)
				break rounds
			}
			if res.failed() {
				fmt.Fprintf(w, "load: the run on %d relays (clients %s) FAILED: %s\n", n, step.placement, res.failure())
				failed = true
			}
			runs = append(runs, scaleRun{round, n, step.placement, res})
		}
	}
	if len(runs) == 0 {
		return true, cmp.Or(runErr, ctx.Err())
	}
	if runErr != nil {
		defer func() { failed, err = true, runErr }()
		fmt.Fprintf(w, "scale: cut short by a run that could not be made (%v); what the %d runs before it measured:\n", runErr, len(runs))
	}
	fmt.Fprintf(w, "scale: the same load on 1 to %d relays and back, %d round(s) (%d connections, %d conversations, %s each, a fresh 3-node cluster each; %d CPUs)\n",
		cfg.Relays, rounds, cfg.Conns, cfg.Convs, cfg.Duration, runs[0].res.CPUs)
	for _, p := range placementsOf(runs) {
		off, all := following(p, cfg.Conns, cfg.Convs, cfg.Relays)
		fmt.Fprintf(w, "  clients %-6s on %d relays: %d of the %d connections on a relay that does not own their conversation (it follows it)\n", p, cfg.Relays, off, all)
	}
	// The latency from a send to its clients is the price of the relays'
	// group commits (relay/committer.go, gather): it goes with the CPU.
	fmt.Fprintf(w, "  %-6s %-7s %-8s %14s %16s %20s %12s %22s %14s\n", "round", "relays", "clients", "deliveries/s", "relays' CPU s", "µs per delivery", "nats CPU s", "send→client p50/p99 ms", "load average")
	for _, r := range runs {
		lat := fmt.Sprintf("%.1f / %.1f", r.res.EndToEnd.P50, r.res.EndToEnd.P99)
		placed := r.placement
		if r.relays == 1 {
			placed = "-"
		}
		fmt.Fprintf(w, "  %-6d %-7d %-8s %14.0f %16.1f %20.2f %12.1f %22s %14s\n", r.round+1, r.relays, placed, r.res.DeliveriesPerSec, r.res.RelayCPUSeconds, r.res.RelayCPUPerDel, r.res.NATSCPUSeconds, lat, r.res.LoadAvgBefore)
	}
	if len(scaleShares(runs, cfg.Relays, "")) == 0 {
		return true, fmt.Errorf("the single relay delivered nothing")
	}
	for _, p := range placementsOf(runs) {
		scaleVerdict(w, runs, cfg.Relays, p)
	}
	return failed, nil
}

// scaleVerdict prints, for the runs of one placement, each relay count's
// share per round and their median, and with three relays the verdict.
func scaleVerdict(w io.Writer, runs []scaleRun, relays int, placement string) {
	perRound := scaleShares(runs, relays, placement)
	var verdict float64
	for n := 2; n <= relays; n++ {
		var shares []string
		var vals []float64
		for _, s := range perRound {
			if v, ok := s[n]; ok {
				vals = append(vals, v)
				shares = append(shares, fmt.Sprintf("%.2f", v))
			}
		}
		if len(vals) == 0 {
			continue
		}
		med := median(vals)
		fmt.Fprintf(w, "scale: %d relays, clients %s: each needs %.2f of one relay's CPU per delivery (median of %d round(s): %s)\n", n, placement, med, len(vals), strings.Join(shares, ", "))
		if n == 3 {
			verdict = med
		}
	}
	if relays != 3 {
		return
	}
	met, with3 := 0, 0 // a round cut short may have no run of 3
	for _, s := range perRound {
		if v, ok := s[3]; ok {
			with3++
			if v <= scaleTarget {
				met++
			}
		}
	}
	if with3 == 0 {
		return
	}
	v := "met"
	if verdict > scaleTarget {
		v = "MISSED"
	}
	fmt.Fprintf(w, "scale: with 3 relays, clients %s, each needs %.2f of one relay's CPU per delivery, the median of %d round(s) (target <= %.2f: %s; met in %d of %d rounds)\n",
		placement, verdict, with3, scaleTarget, v, met, with3)
}

// scaleShares is, for each round that has a run of the single relay that
// delivered, each relay count's CPU per delivery and relay as a share of
// the single relay's: the round's runs of one count in placement taken
// together (their CPU over their deliveries). The single relay's runs are
// every placement's base.
func scaleShares(runs []scaleRun, relays int, placement string) []map[int]float64 {
	type sum struct{ cpu, deliveries float64 }
	var out []map[int]float64
	for round := 0; ; round++ {
		sums := map[int]*sum{}
		any := false
		for _, r := range runs {
			if r.round != round {
				continue
			}
			any = true
			if r.relays > 1 && r.placement != placement {
				continue
			}
			if sums[r.relays] == nil {
				sums[r.relays] = &sum{}
			}
			sums[r.relays].cpu += r.res.RelayCPUSeconds
			sums[r.relays].deliveries += float64(r.res.Deliveries)
		}
		if !any {
			return out
		}
		one := sums[1]
		if one == nil || one.deliveries == 0 || one.cpu == 0 {
			continue
		}
		perDel1 := one.cpu / one.deliveries
		shares := map[int]float64{}
		for n := 1; n <= relays; n++ {
			if s := sums[n]; s != nil && s.deliveries > 0 {
				shares[n] = s.cpu / s.deliveries / float64(n) / perDel1
			}
		}
		out = append(out, shares)
	}
}

// median is the middle value of vals (the mean of the two middle ones for
// an even count); vals is not changed.
func median(vals []float64) float64 {
	s := slices.Clone(vals)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
