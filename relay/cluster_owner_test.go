package relay_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// An owning relay that dies, stops, stalls or loses its lease while it
// runs a turn, and the relay that takes its conversation over.

// Relay A dies mid-turn (its NATS connection and its clients cut, no
// shutdown): within its lease, B (whose client watches) takes the
// conversation over and closes the turn with idle status error; the next
// send from B runs on B; every seq B's client saw is gapless, and A, cut
// off, answers /healthz with 503.
func TestClusterOwnerDies(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		a, bb, ca, cb, id := b.pair(t, "die")

		send(ca, id, "long")
		ca.WaitFor("copilot:delta", nil)
		replayFrom(cb, id, 0)
		before := collect(t, cb, "copilot:delta", func(f relaytest.Frame) bool { return f.Field("content") == "l5 " })

		killed := time.Now()
		a.cut()
		ca.Close()
		if code := healthz(t, a.srv); code != http.StatusServiceUnavailable {
			t.Fatalf("A's /healthz answers %d cut off, want 503", code)
		}

		idle, after := cb.WaitForCollect("copilot:idle", nil)
		took := time.Since(killed)
		if idle.Field("status") != "error" || !strings.Contains(fmt.Sprint(idle.Field("message")), "relay lost") {
			t.Fatalf("B's client got %s", idle.Raw)
		}
		all := append(append(before, after...), idle)
		seqs := eventSeqs(t, "B", all, 0)
		t.Logf("the turn was closed %v after A was cut off (lease %v)", took.Round(time.Millisecond), testLease)
		if !strings.Contains(bb.logs.all(), "took a conversation over") {
			t.Fatal("B's log does not say it took the conversation over")
		}

		send(cb, id, "hello")
		next := collect(t, cb, "copilot:idle", nil)
		eventSeqs(t, "B, next turn", next, seqs[len(seqs)-1])
		if next[len(next)-1].Field("status") != "completed" || !strings.Contains(fmt.Sprint(frameTexts(next)), "Echo: hello") {
			t.Fatalf("the next turn: %s", framesString(next))
		}

		// A third relay replays it all from the stream: the same seqs.
		c3 := b.relay(t, 2, clusterScript(t))
		cc := c3.srv.Dial(t)
		replayFrom(cc, id, 0)
		replay := collect(t, cc, "copilot:subscribed", nil)
		got := eventSeqs(t, "C", replay, 0)
		if want := next[len(next)-1].Seq(); got[len(got)-1] != want {
			t.Fatalf("C replayed up to seq %d, want %d", got[len(got)-1], want)
		}
	})
}

// A relay that shuts down cleanly closes its turns (idle aborted) and gives
// its conversations up at once: the next send from another relay runs
// there without waiting for a lease.
func TestClusterOwnerStops(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		// A lease far longer than a turn takes on a busy machine, so that
		// a send that waited for A's lease to lapse shows as one.
		const lease = 20 * time.Second
		s, opts := clusterScript(t), jetstream.ClusterOptions{Lease: lease}
		a, bb := b.relayWith(t, 0, s, opts), b.relayWith(t, 1, s, opts)
		ca, cb, id := a.srv.Dial(t), bb.srv.Dial(t), "stop-"+b.name

		send(ca, id, "long")
		ca.WaitFor("copilot:delta", nil)
		replayFrom(cb, id, 0)
		cb.WaitFor("copilot:subscribed", nil)
		a.srv.Close()
		wantIdle(t, cb, "B's client", "aborted")
		start := time.Now()
		send(cb, id, "hello")
		next := collect(t, cb, "copilot:idle", nil)
		if next[len(next)-1].Field("status") != "completed" || time.Since(start) > lease {
			t.Fatalf("the next turn, %v after the send: %s", time.Since(start), framesString(next))
		}
		if strings.Contains(bb.logs.all(), "took a conversation over") {
			t.Fatal("B took the conversation over: there was nothing to close")
		}
	})
}

// An owner that lost its lease cannot append. Relay A stalls (it stops
// renewing its lease, as a process paused beyond the lease would) while
// its turn goes on: its lease lapses, B (whose client watches) takes the
// conversation over and closes the turn, and A's next append is refused:
// A stops the turn, and its client gets the new owner's events from then
// on. The stored history is one gapless chain.
func TestClusterFence(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		s := clusterScript(t)
		a := b.relayWith(t, 0, s, jetstream.ClusterOptions{Lease: testLease, RenewEvery: time.Hour})
		bb := b.relay(t, 1, s)
		ca, cb := a.srv.Dial(t), bb.srv.Dial(t)
		id := "fence-" + b.name

		send(ca, id, "long")
		ca.WaitFor("copilot:delta", nil)
		replayFrom(cb, id, 0)
		cb.WaitFor("copilot:subscribed", nil)

		idle := cb.WaitFor("copilot:idle", nil)
		if idle.Field("status") != "error" {
			t.Fatalf("B's client got %s", idle.Raw)
		}
		// A's client: the new owner's idle, through the stream.
		idleA := ca.WaitFor("copilot:idle", nil)
		if idleA.Seq() != idle.Seq() || idleA.Field("status") != "error" {
			t.Fatalf("A's client got %s, B's %s", idleA.Raw, idle.Raw)
		}
		a.logs.waitLog(t, "another relay took this conversation over")

		// The stored chain: gapless, one idle, nothing of A's after it.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var seqs []int64
		var types []string
		if err := bb.store.Events(ctx, id, 0, func(e history.Event) error {
			seqs = append(seqs, e.Seq)
			types = append(types, e.Type)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for i, s := range seqs {
			if s != int64(i+1) {
				t.Fatalf("stored seqs %v", seqs)
			}
		}
		if types[len(types)-1] != "copilot:idle" || countIn(types, "copilot:idle") != 1 {
			t.Fatalf("stored %v", types)
		}
		if seqs[len(seqs)-1] != idle.Seq() {
			t.Fatalf("stored up to %d, idle at %d", seqs[len(seqs)-1], idle.Seq())
		}
		// Nothing follows on either relay: A's turn stopped.
		ca.ExpectNothing(500 * time.Millisecond)
		cb.ExpectNothing(10 * time.Millisecond)
	})
}

// One NATS node of three dies while relay A runs a turn that a client of
// relay B watches: appends and lease renewals wait for new leaders, then
// go on. B's client gets every event, gapless, to the turn's normal end;
// no relay presumes another dead (the lease outlasts the election).
func TestClusterNodeDies(t *testing.T) {
	parallel(t)
	checkNoLeaks(t)
	b, c := clusterBackendWith(t)
	s := clusterScript(t)
	opts := jetstream.ClusterOptions{Lease: jetstream.DefaultLease}
	a, bb := b.relayWith(t, 0, s, opts), b.relayWith(t, 1, s, opts)
	ca, cb := a.srv.Dial(t), bb.srv.Dial(t)
	const id = "node-dies"

	send(ca, id, "long")
	replayFrom(cb, id, 0)
	got := collect(t, cb, "copilot:delta", func(f relaytest.Frame) bool { return f.Field("content") == "l10 " })

	admin := b.connect(t, 2)
	defer admin.Close()
	js, err := natsjs.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	leader, _, err := c.StreamLeader(context.Background(), js, "PD_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	c.Kill(leader)
	t.Logf("killed %s, the events stream's leader", c.Nodes[leader].Name)
	for {
		f, ok := cb.TryNext(40 * time.Second)
		if !ok {
			t.Fatalf("B's client got nothing more after %s: %v", framesString(got[len(got)-3:]), cb.Err())
		}
		if f.Type == "copilot:conversation" {
			continue
		}
		got = append(got, f)
		if f.Type == "copilot:idle" {
			break
		}
	}
	t.Logf("the turn ended %v after the node's death", time.Since(killed).Round(time.Millisecond))
	eventSeqs(t, "B", got, 0)
	if idle := got[len(got)-1]; idle.Field("status") != "completed" {
		t.Fatalf("the turn ended with %s", idle.Raw)
	}
	if n := countType(got, "copilot:delta"); n != 150 {
		t.Fatalf("B's client got %d deltas, want 150", n)
	}
	for _, m := range []*member{a, bb} {
		if log := m.logs.all(); strings.Contains(log, "took a conversation over") || strings.Contains(log, "no longer run here") || strings.Contains(log, "lease lapsed") {
			t.Fatalf("a relay presumed another dead:\n%s", log)
		}
	}
	ca.WaitFor("copilot:idle", nil)
}

// A relay whose own lease lapses while it runs a turn because its
// renewals fail (as a relay cut off from NATS, or in a quorum loss: played
// by failing them for a lease and a half) stops owning its conversations,
// and announces itself again under a new id; its client, which watches,
// has the turn closed (idle, status error) by whichever relay takes the
// conversation over, this one included, saying the lease lapsed, and the
// stored chain stays gapless.
//
// stalled: the relay sends no renewal at all for longer than the lease
// (a process paused: its renewer runs too late). Its next append is
// refused before it goes out, and the turn is closed as one a lost relay
// left, naming the id it had, not as the store's failure: the store was
// fine. (memcluster has no renewer to stall: cut off only.)
func TestClusterLeaseLapses(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		for _, stalled := range []bool{false, true} {
			if stalled && b.net != nil {
				continue
			}
			t.Run(map[bool]string{false: "cutOff", true: "stalled"}[stalled], func(t *testing.T) {
				leaseLapses(t, b, stalled)
			})
		}
	})
}

func leaseLapses(t *testing.T, b testBackend, stalled bool) {
	s := clusterScript(t)
	opts := jetstream.ClusterOptions{Lease: testLease}
	var failFrom atomic.Int64 // Unix ns of the first renewal failed; -1: none yet, 0: off
	switch {
	case stalled || b.net != nil:
		opts.RenewEvery = testLease + time.Second
	default:
		failFrom.Store(0)
		opts.BeforeRenew = func(context.Context) error {
			from := failFrom.Load()
			if from == -1 {
				from = time.Now().UnixNano()
				failFrom.Store(from)
			}
			if from != 0 && time.Since(time.Unix(0, from)) < 3*testLease/2 {
				return errors.New("the renewal timed out (played by the test)")
			}
			return nil
		}
	}
	a := b.relayWith(t, 0, s, opts)
	ca := a.srv.Dial(t)
	id := fmt.Sprintf("lapse-%s-%v", b.name, stalled)
	first := a.cluster.ID()

	send(ca, id, "long")
	delta, early := ca.WaitForCollect("copilot:delta", nil)
	failFrom.CompareAndSwap(0, -1) // the renewals fail from now on (cutOff)
	idle, before := ca.WaitForCollect("copilot:idle", nil)
	before = append(append(early, delta), before...)
	msg := fmt.Sprint(idle.Field("message"))
	switch {
	case stalled:
		// The relay itself was lost, under its first id.
		if idle.Field("status") != "error" || !strings.HasPrefix(msg, "relay lost") {
			t.Fatalf("the client got %s", idle.Raw)
		}
	case idle.Field("status") != "error" || !strings.Contains(msg, "lapsed"):
		// No relay was lost: the turn's own relay closes it, saying its
		// lease lapsed.
		t.Fatalf("the client got %s", idle.Raw)
	}
	eventSeqs(t, "A", append(before, idle), 0)
	a.logs.waitLog(t, "lease lapsed")
	if a.cluster.ID() == first {
		t.Fatalf("the relay is still %s after its lease lapsed", first)
	}
	if !strings.Contains(msg, first) {
		t.Fatalf("the idle does not name the relay that lost the turn (%s): %s", first, idle.Raw)
	}

	// The relay goes on under its new id: the next send runs.
	send(ca, id, "hello")
	next := collect(t, ca, "copilot:idle", nil)
	eventSeqs(t, "A, next turn", next, idle.Seq())
	if next[len(next)-1].Field("status") != "completed" {
		t.Fatalf("the next turn: %s", framesString(next))
	}
}

// The owner dies while its agent waits on a question: the relay that
// takes over closes the question (user_input_closed, aborted) and then the
// turn, and a new subscriber sees neither open.
func TestClusterOwnerDiesWithQuestion(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		a, bb, ca, cb, id := b.pair(t, "dieq")

		send(ca, id, "question")
		req := ca.WaitFor("copilot:user_input_request", nil)
		subscribe(cb, id)
		cb.WaitFor("copilot:subscribed", nil)
		a.cut()

		closed := cb.WaitFor("copilot:user_input_closed", nil)
		if closed.Field("reason") != "aborted" || closed.Field("requestId") != req.Field("requestId") {
			t.Fatalf("B's client got %s", closed.Raw)
		}
		if idle := cb.Expect("copilot:idle"); idle.Field("status") != "error" || idle.Seq() != closed.Seq()+1 {
			t.Fatalf("after the question: %s", idle.Raw)
		}
		late := bb.srv.Dial(t)
		subscribe(late, id)
		sub := late.WaitFor("copilot:subscribed", nil)
		if _, open := dataMap(t, sub)["pendingInput"]; open || sub.Field("streaming") != false {
			t.Fatalf("a new subscriber is told %s", sub.Raw)
		}
	})
}

// A send from B while the owner is dead and its lease still holds waits:
// once the lease lapses the turn is closed, and the send runs on B, with
// no error to the client.
func TestClusterSendWhileOwnerDead(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		a, _, ca, cb, id := b.pair(t, "sendwhile")

		send(ca, id, "long")
		ca.WaitFor("copilot:delta", nil)
		a.cut()
		ca.Close()
		send(cb, id, "hello")

		var got []relaytest.Frame
		for {
			// wait, not a few leases: a busy machine's first tries at
			// the takeover can fail, and the relay tries again.
			f, ok := cb.TryNext(wait)
			if !ok {
				t.Fatalf("B's client got %s and then nothing", framesString(got))
			}
			if f.Type == "error" {
				t.Fatalf("the send was refused: %s", f.Raw)
			}
			got = append(got, f)
			if f.Type == "copilot:idle" && f.Field("status") == "completed" {
				break
			}
		}
		// subscribed (the send's implicit subscription, at the seq B had
		// then), what it missed, the takeover's idle, then the new turn.
		sub := got[0]
		if sub.Type != "copilot:subscribed" {
			t.Fatalf("first %s", sub.Raw)
		}
		eventSeqs(t, "B", got[1:], sub.Seq())
		var closedAt, startedAt int
		for i, f := range got {
			switch {
			case f.Type == "copilot:idle" && f.Field("status") == "error":
				closedAt = i
			case f.Type == "copilot:user_message" && f.Field("content") == "hello":
				startedAt = i
			}
		}
		if closedAt == 0 || startedAt < closedAt {
			t.Fatalf("B's client got %s", framesString(got))
		}
	})
}
