package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
)

// scaleTarget is issue #32's: with the same offered load spread over three
// relays, each needs at most 0.38 of the single relay's CPU (three relays
// carry at least 2.6 times one relay's load).
const scaleTarget = 0.38

// scaleRun is one relay count's run of -scale.
type scaleRun struct {
	relays int
	res    *result
}

// runScale runs the same load (-conns, -convs, -duration, the same agent)
// on 1, 2, … -relays relays sharing a 3-node cluster, each count a run of
// its own (a fresh cluster, no fault), in one invocation: the counts up,
// then down again (1, 2, 3, 3, 2, 1), so that a machine that others load
// unevenly weighs on every count alike. It prints each run, then each
// relay's CPU per delivery as a share of the single relay's, from the two
// runs of each count together (the runs deliver nearly, not exactly, the
// same). Any run that loses or repeats a delivery fails it.
func runScale(ctx context.Context, cfg config, log *slog.Logger, w io.Writer) (failed bool, err error) {
	var order []int
	for n := 1; n <= cfg.Relays; n++ {
		order = append(order, n)
	}
	for n := cfg.Relays; n >= 1; n-- {
		order = append(order, n)
	}
	var runs []scaleRun
	for k, n := range order {
		if ctx.Err() != nil {
			break
		}
		c := cfg
		c.Relays, c.IdleRelays, c.KillAt, c.Fault = n, 0, 0, faultNone
		c.profileTag = fmt.Sprintf("run%d-relays%d-", k+1, n)
		log.Info("load: scale run", "relays", n)
		res, err := run(ctx, c, log)
		if err != nil {
			return true, fmt.Errorf("the run on %d relays: %w", n, err)
		}
		if res.failed() {
			fmt.Fprintf(w, "load: the run on %d relays FAILED: %s\n", n, res.failure())
			failed = true
		}
		runs = append(runs, scaleRun{n, res})
	}
	fmt.Fprintf(w, "scale: the same load on 1 to %d relays and back (%d connections, %d conversations, %s each, a fresh 3-node cluster each; %d CPUs)\n",
		cfg.Relays, cfg.Conns, cfg.Convs, cfg.Duration, runs[0].res.CPUs)
	fmt.Fprintf(w, "  %-7s %14s %16s %20s %12s %14s\n", "relays", "deliveries/s", "relays' CPU s", "µs per delivery", "nats CPU s", "load average")
	type sum struct{ cpu, deliveries float64 }
	sums := map[int]*sum{}
	for _, r := range runs {
		fmt.Fprintf(w, "  %-7d %14.0f %16.1f %20.2f %12.1f %14s\n", r.relays, r.res.DeliveriesPerSec, r.res.RelayCPUSeconds, r.res.RelayCPUPerDel, r.res.NATSCPUSeconds, r.res.LoadAvgBefore)
		if sums[r.relays] == nil {
			sums[r.relays] = &sum{}
		}
		sums[r.relays].cpu += r.res.RelayCPUSeconds
		sums[r.relays].deliveries += float64(r.res.Deliveries)
	}
	one := sums[1]
	if one == nil || one.deliveries == 0 {
		return true, fmt.Errorf("the single relay delivered nothing")
	}
	perDel1 := one.cpu / one.deliveries
	var share float64
	for n := 1; n <= cfg.Relays; n++ {
		s := sums[n]
		if s == nil || s.deliveries == 0 {
			continue
		}
		share = s.cpu / s.deliveries / float64(n) / perDel1
		fmt.Fprintf(w, "scale: %d relays: each needs %.2f of one relay's CPU per delivery\n", n, share)
	}
	if cfg.Relays == 3 {
		verdict := "met"
		if share > scaleTarget {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "scale: with 3 relays each needs %.2f of one relay's CPU per delivery (target <= %.2f: %s)\n", share, scaleTarget, verdict)
	}
	return failed, nil
}
