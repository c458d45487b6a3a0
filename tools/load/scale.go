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
// its own (a fresh cluster, no fault), one after the other in one
// invocation, and prints each relay's CPU as a share of the single
// relay's: raw, and per delivery (the runs deliver nearly, not exactly,
// the same). Any run that loses or repeats a delivery fails it.
func runScale(ctx context.Context, cfg config, log *slog.Logger, w io.Writer) (failed bool, err error) {
	var runs []scaleRun
	for n := 1; n <= cfg.Relays; n++ {
		c := cfg
		c.Relays, c.IdleRelays, c.KillAt, c.Fault = n, 0, 0, faultNone
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
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Fprintf(w, "scale: the same load on 1 to %d relays (%d connections, %d conversations, %s each, a fresh 3-node cluster each; %d CPUs)\n",
		cfg.Relays, cfg.Conns, cfg.Convs, cfg.Duration, runs[0].res.CPUs)
	fmt.Fprintf(w, "  %-7s %14s %16s %14s %18s %22s %12s\n", "relays", "deliveries/s", "relays' CPU s", "per relay", "share of one", "share per delivery", "nats CPU s")
	one := runs[0].res
	for _, r := range runs {
		perRelay := r.res.RelayCPUSeconds / float64(r.relays)
		share := perRelay / one.RelayCPUSeconds
		perDel := 0.0
		if one.RelayCPUPerDel > 0 {
			perDel = r.res.RelayCPUPerDel / float64(r.relays) / one.RelayCPUPerDel
		}
		fmt.Fprintf(w, "  %-7d %14.0f %16.1f %12.2f s %18.2f %22.2f %12.1f\n", r.relays, r.res.DeliveriesPerSec, r.res.RelayCPUSeconds, perRelay, share, perDel, r.res.NATSCPUSeconds)
	}
	if len(runs) >= 3 {
		last := runs[len(runs)-1]
		perDel := last.res.RelayCPUPerDel / float64(last.relays) / one.RelayCPUPerDel
		verdict := "met"
		if last.relays == 3 && perDel > scaleTarget {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "scale: with %d relays each needs %.2f of one relay's CPU per delivery (target with 3 <= %.2f: %s)\n", last.relays, perDel, scaleTarget, verdict)
	}
	return failed, nil
}
