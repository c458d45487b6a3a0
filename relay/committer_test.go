package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// slowWrites is a store whose writes take 2 ms or more, as a replicated
// one's do: what makes a small commit wait (a store that answers in under
// a millisecond makes none wait).
type slowWrites struct{ history.Store }

func (s slowWrites) Write(ctx context.Context, b history.Batch) error {
	time.Sleep(2 * time.Millisecond)
	return s.Store.Write(ctx, b)
}

// TestSmallCommitsGather: on a store whose writes take a while, a commit
// that would carry fewer than 8 events, soon after the previous one began,
// waits for more (Config.CommitWindow),
// so that a relay with few events commits less often (issue #32): with a
// window longer than the test, 7 deltas streamed one by one reach nobody
// and no store, and the 8th sends all 8 in one Write. The first commit
// (nothing committed before) does not wait, and the relay's Close (a stop
// queued behind the turn's held idle) ends the wait.
func TestSmallCommitsGather(t *testing.T) {
	e := start(t, func(c *relay.Config) {
		c.CommitWindow = time.Hour
		c.Store = slowWrites{c.Store}
	})
	cl, _ := e.subscribe("gather")
	ft := e.startTurn(cl, "gather", "go", nil) // the first commit did not wait
	sync_(t, cl)
	writes, events := e.store.counts()

	for i := range 7 {
		ft.delta("m1", fmt.Sprintf("d%d ", i))
	}
	expectQuiet(t, cl)
	if w, ev := e.store.counts(); w != writes || ev != events {
		t.Fatalf("7 deltas made %d writes of %d events; want them held for more", w-writes, ev-events)
	}

	ft.delta("m1", "d7")
	for i := range 8 {
		d := cl.WaitFor("copilot:delta", nil)
		if want := fmt.Sprintf("d%d", i); d.Field("content") != want && d.Field("content") != want+" " {
			t.Fatalf("delta %d: %q", i, d.Field("content"))
		}
	}
	if w, ev := e.store.counts(); w != writes+1 || ev != events+8 {
		t.Fatalf("8 deltas made %d writes of %d events; want 1 of 8", w-writes, ev-events)
	}
	ft.finish(nil)
}
