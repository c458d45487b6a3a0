package relay_test

import (
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay"
)

// With Config.CommitInterval the deltas that come within it after a write
// of deltas go to the store in one write (and to the clients in one
// fan-out), each still stored before it is sent; without it each delta
// that comes while the committer waits is a write of its own.
func TestCommitIntervalGathersDeltas(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
		check    func(writes int) bool
		want     string
	}{
		{"spaced", time.Second, func(w int) bool { return w == 1 }, "1"},
		{"default", 0, func(w int) bool { return w >= 3 }, "at least 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t, func(c *relay.Config) { c.CommitInterval = tc.interval })
			cl, _ := e.subscribe("c1")
			ft := e.startTurn(cl, "c1", "hi", nil)
			ft.delta("m1", "one ")
			cl.WaitFor("copilot:delta", nil)
			before, _ := e.store.counts()
			// Nine more, 10 ms apart: far less than the interval, far
			// more than a write of the memory store takes.
			for range 9 {
				time.Sleep(10 * time.Millisecond)
				ft.delta("m1", "more ")
			}
			for range 9 {
				cl.WaitFor("copilot:delta", nil)
			}
			after, _ := e.store.counts()
			if !tc.check(after - before) {
				t.Errorf("the nine deltas took %d writes, want %s", after-before, tc.want)
			}
			ft.finish(nil)
			cl.WaitFor("copilot:idle", nil)
		})
	}
}

// Only deltas wait for the interval: the turn's end, queued behind a delta
// held back, is written at once and takes the delta with it, so that the
// relay's other messages (copilot:budget) stay after the events that led
// to them. The interval here is longer than the client waits.
func TestCommitIntervalHoldsOnlyDeltas(t *testing.T) {
	e := start(t, func(c *relay.Config) { c.CommitInterval = time.Hour })
	cl, _ := e.subscribe("c1")
	ft := e.startTurn(cl, "c1", "hi", nil)
	ft.delta("m1", "one ")
	cl.WaitFor("copilot:delta", nil) // the first after other events: at once
	ft.delta("m1", "two ")           // held: the last write was deltas alone
	ft.finish(nil)
	cl.WaitFor("copilot:delta", nil)
	cl.WaitFor("copilot:idle", nil)
}
