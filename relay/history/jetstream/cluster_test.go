package jetstream

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/historytest"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// These tests run on a real 3-node nats-server cluster on 127.0.0.1 (R3
// streams), started by natstest with the least-privilege relay user. They
// are skipped, saying why, only when nats-server is not installed (make
// nats-server installs it).

func clusterConn(t *testing.T, c *natstest.Cluster, first int) *nats.Conn {
	t.Helper()
	nc, err := c.Connect(first)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// resetDefault deletes the default stream and bucket, so the next Open
// starts an empty history under the relay user's permissions (which name
// the default bucket only).
func resetDefault(t *testing.T, nc *nats.Conn) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// PD_EVENTS and, in a history of several streams, PD_EVENTS_<k>.
	shardRE := regexp.MustCompile(`^PD_EVENTS(_[0-9]+)?$`)
	var streams []string
	for name := range js.StreamNames(ctx).Name() {
		if shardRE.MatchString(name) {
			streams = append(streams, name)
		}
	}
	for _, name := range streams {
		if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Fatalf("delete stream %s: %v", name, err)
		}
	}
	for _, b := range []string{"pd_meta", "pd_devices", "pd_spend"} {
		if err := js.DeleteKeyValue(ctx, b); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			t.Fatalf("delete bucket %s: %v", b, err)
		}
	}
}

// startCluster makes a relay's Cluster on st, with a 4 s lease unless
// opts has one, starts it with h, and stops it when the test ends (a Stop
// of the test's own before then makes that one do nothing).
func startCluster(t *testing.T, st *Store, opts ClusterOptions, h history.ClusterHooks) *Cluster {
	t.Helper()
	cl := newCluster(t, st, opts)
	if err := cl.Start(h); err != nil {
		t.Fatal(err)
	}
	return cl
}

// newCluster is startCluster without the Start, for a test that changes
// the Cluster first.
func newCluster(t *testing.T, st *Store, opts ClusterOptions) *Cluster {
	t.Helper()
	if opts.Lease == 0 {
		opts.Lease = 4 * time.Second
	}
	cl, err := NewCluster(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = cl.Stop(ctx)
	})
	return cl
}

func openR3(t *testing.T, nc *nats.Conn, opts Options) *Store {
	t.Helper()
	opts.Replicas = 3
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, nc, withStreams(t, opts))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestClusterConformance runs the history conformance suite on an R3
// stream of a 3-node cluster.
func TestClusterConformance(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	nc := clusterConn(t, c, 0)
	historytest.Run(t, func(t *testing.T) history.Store {
		resetDefault(t, nc)
		return openR3(t, nc, Options{})
	})
}

// TestClusterNodeDies kills one node of the cluster while a store writes
// four conversations, and checks that the writes go on (a follower) or
// resume after the election of a new leader (the stream's leader), within
// the store's bounded retry, with nothing lost and no seq twice. The
// store's connection is to the node that dies, so it reconnects too.
func TestClusterNodeDies(t *testing.T) {
	t.Parallel()
	for _, victim := range []string{"follower", "leader"} {
		t.Run(victim, func(t *testing.T) {
			t.Parallel() // each on a cluster of its own
			nodeDies(t, victim == "leader")
		})
	}
}

func nodeDies(t *testing.T, leader bool) {
	c := natstest.Start(t, 3)
	admin := clusterConn(t, c, 0)
	resetDefault(t, admin)
	setup := openR3(t, admin, Options{})
	setup.Close()
	js, _ := jetstream.New(admin)
	ctx := context.Background()
	lead, follow, err := c.StreamLeader(ctx, js, "PD_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	victim := follow
	if leader {
		victim = lead
	}
	t.Logf("stream leader %s; killing %s", c.Nodes[lead].Name, c.Nodes[victim].Name)

	nc := clusterConn(t, c, victim)
	s := openR3(t, nc, Options{WriteTimeout: 30 * time.Second})
	defer s.Close()

	convs := []string{"c1", "c2", "c3", "c4"}
	const perWrite, before, after = 5, 30, 60
	var (
		seq        int64
		maxLatency time.Duration
		killedAt   time.Time
		resumedIn  time.Duration
		writes     int
	)
	write := func() {
		t.Helper()
		var b history.Batch
		for _, id := range convs {
			for k := int64(1); k <= perWrite; k++ {
				b.Events = append(b.Events, frameEvent(id, seq+k))
			}
			b.Conversations = append(b.Conversations, history.Conversation{ID: id, Mode: "act", LastSeq: seq + perWrite, UpdatedAt: time.Unix(0, seq)})
		}
		start := time.Now()
		if err := s.Write(ctx, b); err != nil {
			t.Fatalf("write %d (events %d-%d): %v", writes+1, seq+1, seq+perWrite, err)
		}
		done := time.Now()
		maxLatency = max(maxLatency, done.Sub(start))
		if !killedAt.IsZero() && resumedIn == 0 {
			resumedIn = done.Sub(killedAt)
		}
		seq += perWrite
		writes++
	}
	for range before {
		write()
	}
	c.Kill(victim)
	killedAt = time.Now()
	for range after {
		write()
	}
	t.Logf("%s killed: the first write after the kill completed %v after it; the longest write took %v; %d writes of %d events, none failed",
		c.Nodes[victim].Name, resumedIn.Round(time.Millisecond), maxLatency.Round(time.Millisecond), writes, perWrite*len(convs))
	if resumedIn > 20*time.Second {
		t.Errorf("writes resumed %v after the kill; want within 20 s (an election takes 4-9 s)", resumedIn)
	}

	// A fresh store, on another connection, reads every event once.
	check := func(first int) {
		t.Helper()
		nc2 := clusterConn(t, c, first)
		r := openR3(t, nc2, Options{})
		defer r.Close()
		for _, id := range convs {
			var got []int64
			err := r.Events(ctx, id, 0, func(e history.Event) error {
				if want := frameEvent(id, e.Seq); string(e.Frame) != string(want.Frame) {
					return fmt.Errorf("%s seq %d: frame %q", id, e.Seq, e.Frame)
				}
				got = append(got, e.Seq)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(got)) != seq {
				t.Fatalf("%s: %d events, want %d", id, len(got), seq)
			}
			for i, q := range got {
				if q != int64(i+1) {
					t.Fatalf("%s: event %d has seq %d (a gap or a repeat)", id, i, q)
				}
			}
			cv, err := r.Conversation(ctx, id)
			if err != nil || cv.LastSeq != seq {
				t.Fatalf("%s: Conversation = %+v, %v; want LastSeq %d", id, cv, err, seq)
			}
		}
	}
	check((victim + 1) % 3)
	// The dead node comes back and catches up; the history is the same
	// read through it.
	c.Restart(victim)
	c.WaitReady(60 * time.Second)
	waitCurrent(t, c, victim)
	check(victim)
}

// waitCurrent waits until node i, restarted, answers for the events stream
// and the bucket's, with every replica current.
func waitCurrent(t *testing.T, c *natstest.Cluster, i int) {
	t.Helper()
	nc := clusterConn(t, c, i)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, stream := range []string{"PD_EVENTS", "KV_pd_meta"} {
		waitStreamCurrent(t, js, stream, c.Nodes[i].Name, deadline)
	}
}

func waitStreamCurrent(t *testing.T, js jetstream.JetStream, stream, node string, deadline time.Time) {
	t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := js.Stream(ctx, stream)
		var info *jetstream.StreamInfo
		if err == nil {
			info, err = st.Info(ctx)
		}
		cancel()
		if err == nil && info.Cluster != nil && len(info.Cluster.Replicas) == 2 {
			current := true
			for _, r := range info.Cluster.Replicas {
				current = current && r.Current && !r.Offline
			}
			if current {
				return
			}
			err = fmt.Errorf("replicas %+v", info.Cluster.Replicas)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not serve %s with every replica current: %v", node, stream, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func frameEvent(id string, seq int64) history.Event {
	return history.Event{ConversationID: id, Seq: seq, Type: "copilot:delta",
		Frame: fmt.Appendf(nil, `{"type":"copilot:delta","data":{"conversationId":%q,"seq":%d,"content":"x"}}`, id, seq)}
}

// TestClusterRacingWriters has two stores, on two connections to
// different nodes, append the same seq of one conversation at once, with
// the same expectation: exactly one is stored each round, the other gets
// history.ErrConflict, and the chain holds one event per seq.
func TestClusterRacingWriters(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	nc1 := clusterConn(t, c, 0)
	nc2 := clusterConn(t, c, 1)
	resetDefault(t, nc1)
	a := openR3(t, nc1, Options{})
	defer a.Close()
	b := openR3(t, nc2, Options{})
	defer b.Close()
	ctx := context.Background()
	const rounds = 50
	winners := map[int64]string{}
	fenced := 0 // rounds where both appended and the server refused one
	for seq := int64(1); seq <= rounds; seq++ {
		var wg sync.WaitGroup
		errs := map[string]error{}
		var mu sync.Mutex
		for name, s := range map[string]*Store{"a": a, "b": b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e := frameEvent("race", seq)
				e.Frame = fmt.Appendf(nil, `{"writer":%q,"seq":%d}`, name, seq)
				err := s.Write(ctx, history.Batch{Events: []history.Event{e},
					Conversations: []history.Conversation{{ID: "race", Mode: "act", LastSeq: seq}}})
				mu.Lock()
				errs[name] = err
				mu.Unlock()
			}()
		}
		wg.Wait()
		switch {
		case errs["a"] == nil && errs["b"] != nil:
			winners[seq] = "a"
		case errs["b"] == nil && errs["a"] != nil:
			winners[seq] = "b"
		default:
			t.Fatalf("round %d: a: %v; b: %v; want exactly one stored", seq, errs["a"], errs["b"])
		}
		// The loser was fenced by the server (a conflict, named per
		// conversation), or, when the winner's append was stored before
		// the loser read the subject, refused as a repeated seq.
		loser := map[string]string{"a": "b", "b": "a"}[winners[seq]]
		var pe *history.PartialWriteError
		switch err := errs[loser]; {
		case errors.Is(err, history.ErrConflict):
			if !errors.As(err, &pe) || pe.Failed["race"] == nil {
				t.Fatalf("round %d: the loser's error %v does not name the conversation", seq, err)
			}
			fenced++
		case strings.Contains(err.Error(), "already stored"):
		default:
			t.Fatalf("round %d: the loser's error %v is neither a conflict nor a repeated seq", seq, err)
		}
	}
	var n int64
	err := a.Events(ctx, "race", 0, func(e history.Event) error {
		n++
		if want := fmt.Sprintf(`{"writer":%q,"seq":%d}`, winners[e.Seq], e.Seq); e.Seq != n || string(e.Frame) != want {
			return fmt.Errorf("event %d: seq %d %s, want %s", n, e.Seq, e.Frame, want)
		}
		return nil
	})
	if err != nil || n != rounds {
		t.Fatalf("read %d events, %v; want %d", n, err, rounds)
	}
	wins := 0
	for _, w := range winners {
		if w == "a" {
			wins++
		}
	}
	t.Logf("%d rounds: a won %d, b %d; %d losers fenced by the server (ErrConflict), the others refused a stored seq", rounds, wins, rounds-wins, fenced)
	if fenced == 0 {
		t.Error("no round raced to the server: the fence was not exercised")
	}
}

// TestClusterOpenRace opens stores through each node at once on a fresh
// cluster, as relays started together do, several times over: each finds
// or creates the stream and the bucket, and all of them end up on the one
// stream (one epoch). The loser of a create could look the winner's stream
// up while its replicas were still electing a leader, be told it did not
// exist, and fail to start: a clean-clone make test on a loaded machine
// saw it once (tests/cluster); on a quiet one this test does not hit that
// moment, so it guards the races' outcome, not that one timing.
func TestClusterOpenRace(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	conns := []*nats.Conn{clusterConn(t, c, 0), clusterConn(t, c, 1), clusterConn(t, c, 2)}
	for round := range 4 {
		resetDefault(t, conns[0])
		stores := make([]*Store, 2*len(conns))
		errs := make([]error, len(stores))
		var wg sync.WaitGroup
		for i := range stores {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				stores[i], errs[i] = Open(ctx, conns[i%len(conns)], withStreams(t, Options{Replicas: 3}))
			})
		}
		wg.Wait()
		epoch := ""
		for i, s := range stores {
			if errs[i] != nil {
				t.Fatalf("round %d: store %d: %v", round, i, errs[i])
			}
			if epoch == "" {
				epoch = s.Epoch()
			}
			if s.Epoch() != epoch {
				t.Errorf("round %d: store %d has epoch %s, another %s: two streams", round, i, s.Epoch(), epoch)
			}
			s.Close()
		}
	}
}
