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
	round  int // from 0
	relays int
	res    *result
}

// scaleOrder is the relay counts of one round: up, then down again (1, 2,
// 3, 3, 2, 1), so that a machine that others load unevenly weighs on every
// count alike.
func scaleOrder(relays int) []int {
	var order []int
	for n := 1; n <= relays; n++ {
		order = append(order, n)
	}
	for n := relays; n >= 1; n-- {
		order = append(order, n)
	}
	return order
}

// runScale runs the same load (-conns, -convs, -duration, the same agent)
// on 1, 2, … -relays relays sharing a 3-node cluster, each count a run of
// its own (a fresh cluster, no fault), in one invocation: -rounds rounds of
// the counts up, then down again. It prints each run, then each relay's
// CPU per delivery as a share of the single relay's: per round, from the
// round's two runs of each count together (the runs deliver nearly, not
// exactly, the same), and the median of the rounds, which decides the
// verdict (one round on a machine others share can be far off either
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
	var runs []scaleRun
	var runErr error
	k := 0
rounds:
	for round := range rounds {
		for _, n := range scaleOrder(cfg.Relays) {
			if ctx.Err() != nil {
				break rounds
			}
			k++
			c := cfg
			c.Relays, c.IdleRelays, c.KillAt, c.Fault = n, 0, 0, faultNone
			c.profileTag = fmt.Sprintf("run%d-relays%d-", k, n)
			log.Info("load: scale run", "round", round+1, "relays", n)
			res, err := run(ctx, c, log)
			if err != nil {
				runErr = fmt.Errorf("the run on %d relays: %w", n, err)
				break rounds
			}
			if res.failed() {
				fmt.Fprintf(w, "load: the run on %d relays FAILED: %s\n", n, res.failure())
				failed = true
			}
			runs = append(runs, scaleRun{round, n, res})
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
	// The latency from a send to its clients is the price of the relays'
	// group commits (relay/committer.go, gather): it goes with the CPU.
	fmt.Fprintf(w, "  %-6s %-7s %14s %16s %20s %12s %22s %14s\n", "round", "relays", "deliveries/s", "relays' CPU s", "µs per delivery", "nats CPU s", "send→client p50/p99 ms", "load average")
	for _, r := range runs {
		lat := fmt.Sprintf("%.1f / %.1f", r.res.EndToEnd.P50, r.res.EndToEnd.P99)
		fmt.Fprintf(w, "  %-6d %-7d %14.0f %16.1f %20.2f %12.1f %22s %14s\n", r.round+1, r.relays, r.res.DeliveriesPerSec, r.res.RelayCPUSeconds, r.res.RelayCPUPerDel, r.res.NATSCPUSeconds, lat, r.res.LoadAvgBefore)
	}
	perRound := scaleShares(runs, cfg.Relays)
	if len(perRound) == 0 {
		return true, fmt.Errorf("the single relay delivered nothing")
	}
	var verdict float64
	for n := 1; n <= cfg.Relays; n++ {
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
		fmt.Fprintf(w, "scale: %d relays: each needs %.2f of one relay's CPU per delivery (median of %d round(s): %s)\n", n, med, len(vals), strings.Join(shares, ", "))
		if n == 3 {
			verdict = med
		}
	}
	if cfg.Relays == 3 {
		met, with3 := 0, 0 // a round cut short may have no run of 3
		for _, s := range perRound {
			if v, ok := s[3]; ok {
				with3++
				if v <= scaleTarget {
					met++
				}
			}
		}
		v := "met"
		if verdict > scaleTarget {
			v = "MISSED"
		}
		fmt.Fprintf(w, "scale: with 3 relays each needs %.2f of one relay's CPU per delivery, the median of %d round(s) (target <= %.2f: %s; met in %d of %d rounds)\n",
			verdict, with3, scaleTarget, v, met, with3)
	}
	return failed, nil
}

// scaleShares is, for each round that has a run of the single relay that
// delivered, each relay count's CPU per delivery and relay as a share of
// the single relay's: the round's runs of one count taken together (their
// CPU over their deliveries).
func scaleShares(runs []scaleRun, relays int) []map[int]float64 {
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
