package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/session/script"

	"github.com/pilotdesk/pilotdesk/internal/testbin"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// TestMain removes the pilotdesk binary testbin built once every test that
// runs it is done.
func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

func TestSeqTracker(t *testing.T) {
	tests := []struct {
		name                    string
		base                    int64
		seqs                    []int64
		final                   int64
		received, lost, repeats int64
	}{
		{"contiguous", 0, []int64{1, 2, 3, 4}, 4, 4, 0, 0},
		{"from a later subscription point", 10, []int64{11, 12}, 12, 2, 0, 0},
		{"a gap", 0, []int64{1, 2, 5, 6}, 6, 4, 2, 0},
		{"a repeat", 0, []int64{1, 2, 2, 3}, 3, 3, 0, 1},
		{"out of order", 0, []int64{1, 3, 2}, 3, 2, 1, 1},
		{"the tail never came", 0, []int64{1, 2}, 5, 2, 3, 0},
		{"nothing came", 7, nil, 9, 0, 2, 0},
		{"an event from before the subscription", 5, []int64{5, 6}, 6, 1, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s seqTracker
			s.start(tt.base)
			for _, seq := range tt.seqs {
				s.add(seq)
			}
			s.finish(tt.final)
			if s.received != tt.received || s.lost != tt.lost || s.repeats != tt.repeats {
				t.Errorf("received %d lost %d repeats %d, want %d %d %d", s.received, s.lost, s.repeats, tt.received, tt.lost, tt.repeats)
			}
		})
	}
}

// The generated script is one the scripted agent accepts, with the prompt
// echoed first and deltas of the asked size.
func TestLoadScript(t *testing.T) {
	cfg := config{Deltas: 5, Interval: 15 * time.Millisecond, Payload: 24}
	s, err := script.Parse("load.json", loadScript(cfg))
	if err != nil {
		t.Fatalf("the scripted agent refuses the load script: %v\n%s", err, loadScript(cfg))
	}
	if len(s.Turns) != 1 || len(s.Turns[0].Steps) != 1+2*cfg.Deltas {
		t.Fatalf("script: %+v", s)
	}
	if d, ok := s.Turns[0].Steps[0].(script.DeltaStep); !ok || d.Text != "{{prompt}}" {
		t.Errorf("first step %+v, want the prompt echoed", s.Turns[0].Steps[0])
	}
	for _, st := range s.Turns[0].Steps[1:] {
		switch st := st.(type) {
		case script.DeltaStep:
			if len(st.Text) != cfg.Payload {
				t.Errorf("delta %q is %d bytes, want %d", st.Text, len(st.Text), cfg.Payload)
			}
		case script.SleepStep:
			if st.Duration != cfg.Interval {
				t.Errorf("sleep %v, want %v", st.Duration, cfg.Interval)
			}
		default:
			t.Errorf("unexpected step %T", st)
		}
	}
}

func TestLatencyPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := latencyOf(ds)
	if l.Samples != 100 || l.P50 != 50 || l.P99 != 99 || l.Max != 100 {
		t.Errorf("%+v", l)
	}
	if l := latencyOf(nil); l.Samples != 0 {
		t.Errorf("empty: %+v", l)
	}
}

// TestRunSmall runs the whole tool, small and short, against the real
// binary, with SQLite and with in-memory history: nothing lost, figures
// filled in.
func TestRunSmall(t *testing.T) {
	bin := testbin.Build(t)
	for _, tc := range []struct {
		name   string
		memory bool
		killAt time.Duration
	}{
		{"sqlite", false, 0},
		{"memory", true, 0},
		{"sqlite, SIGKILL and restart mid-run", false, 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each run has its relay process and data dir of its own, and
			// spends most of its 3 s, and the relay's start, waiting.
			t.Parallel()
			cfg := config{Bin: bin, Conns: 40, Convs: 4, Duration: 3 * time.Second, Memory: tc.memory, KillAt: tc.killAt,
				Deltas: 20, Interval: 10 * time.Millisecond, Payload: 24, DialConc: 8, Drain: 60 * time.Second, VerifyHistory: true}
			if err := cfg.validate(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			res.print(&out)
			t.Log("\n" + out.String())
			if res.failed() {
				t.Fatalf("the run failed: %s", res.failure())
			}
			if res.Turns < int64(cfg.Convs) || res.Deliveries == 0 || res.AllDeliveries < res.Deliveries {
				t.Errorf("turns %d, deliveries %d of %d", res.Turns, res.Deliveries, res.AllDeliveries)
			}
			if tc.killAt > 0 {
				if res.Kills != 1 || res.Reconnects < cfg.Conns || res.RestartedTurns == 0 {
					t.Errorf("kills %d, reconnects %d, turns closed by the restart %d: want 1, every connection, some",
						res.Kills, res.Reconnects, res.RestartedTurns)
				}
			} else {
				// Every subscriber gets every event of every turn: user
				// message, the echoed prompt, the deltas, the message,
				// idle.
				perTurn := int64(1 + 1 + cfg.Deltas + 2)
				if want := res.Turns * perTurn * int64(cfg.Conns/cfg.Convs); res.AllDeliveries != want {
					t.Errorf("%d deliveries in all, want %d turns × %d events × %d subscribers = %d",
						res.AllDeliveries, res.Turns, perTurn, cfg.Conns/cfg.Convs, want)
				}
				if res.Reconnects != 0 {
					t.Errorf("%d reconnects in a run without a kill", res.Reconnects)
				}
			}
			if !tc.memory && res.HistoryChecked != res.AllDeliveries/int64(cfg.Conns/cfg.Convs) {
				t.Errorf("the history check read %d events, want %d (every event of every conversation)",
					res.HistoryChecked, res.AllDeliveries/int64(cfg.Conns/cfg.Convs))
			}
			if res.EndToEnd.Samples == 0 || res.Spread.Samples == 0 || res.RelayPeakRSSKiB == 0 {
				t.Errorf("figures missing: %+v", res)
			}
			if res.Dir != "" {
				os.RemoveAll(res.Dir)
			}
		})
	}
}

// TestRunNATS runs the whole tool with -nats, short: a real 3-node
// nats-server cluster, three `pilotdesk serve --nats` relays, one SIGKILLed
// mid-run. Nothing lost; the killed relay's clients resumed at the others;
// the turns it ran closed with "relay lost" at another relay's client
// (within a few seconds of the 4 s lease), and each of those conversations
// ran a turn after it; the history replayed from a survivor holds every
// event every client got, with the same bytes.
func TestRunNATS(t *testing.T) {
	if _, err := natstest.Binary(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	bin := testbin.Build(t)
	const lease = 4 * time.Second
	cfg := config{Bin: bin, Conns: 150, Convs: 15, Duration: 10 * time.Second, KillAt: 4 * time.Second,
		NATS: true, Relays: 3, IdleRelays: 1, NATSLease: lease,
		Deltas: 50, Interval: 20 * time.Millisecond, Payload: 24, DialConc: 16, Drain: 60 * time.Second, VerifyHistory: true}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	res.print(&out)
	t.Log("\n" + out.String())
	if res.failed() {
		t.Fatalf("the run failed: %s", res.failure())
	}
	if res.Kills != 1 || res.KilledClients != cfg.Conns/cfg.Relays || res.Reconnects < res.KilledClients {
		t.Errorf("kills %d, the killed relay's clients %d, reconnects %d: want 1, %d, at least as many", res.Kills, res.KilledClients, res.Reconnects, cfg.Conns/cfg.Relays)
	}
	// Conversation i's sender is on relay i mod 3, where its first turn
	// runs: a third of them were the killed relay's, and each had a turn
	// running unless the kill fell between two of its turns.
	if owned := int64(cfg.Convs / cfg.Relays); res.RestartedTurns < 1 || res.RestartedTurns > owned || res.Takeover.Samples != int(res.RestartedTurns) {
		t.Errorf("%d turns closed by a takeover, seen by a client in %d conversations; want 1 to %d, the same",
			res.RestartedTurns, res.Takeover.Samples, owned)
	}
	if res.Takeover.Max > float64((lease+5*time.Second)/time.Millisecond) {
		t.Errorf("takeover took up to %.0f ms with a lease of %v", res.Takeover.Max, lease)
	}
	if n := res.AllDeliveries / int64(cfg.Conns/cfg.Convs); res.HistoryChecked < n {
		t.Errorf("the history check read %d events, fewer than one subscriber's share of the deliveries (%d)", res.HistoryChecked, n)
	}
	// The idle relay has no client, yet follows every conversation.
	if len(res.IdleRelayCPU) != 1 || res.IdleRelayCPU[0] <= 0 || !strings.Contains(out.String(), "idle relay 1's CPU") {
		t.Errorf("the idle relay's CPU: %v", res.IdleRelayCPU)
	}
	if res.Dir != "" {
		os.RemoveAll(res.Dir)
	}
}

// A sender that resumes after a restart and finds its conversation idle
// while the turn it saw start never ended reports it: the relay must close
// an interrupted turn with a stored copilot:idle.
func TestResumeDetectsUnclosedTurn(t *testing.T) {
	state := &runState{}
	c := &client{sender: true, run: state, log: slog.New(slog.NewTextHandler(io.Discard, nil)), conv: &conversation{}}
	c.turnOpen, c.prompted = true, true // prompted: no new prompt is sent
	var f frame
	f.Data.Streaming = false
	c.afterResume(context.Background(), &f)
	if state.errors.Load() != 1 || c.turnOpen {
		t.Errorf("errors %d, turnOpen %v: the unclosed turn went unnoticed", state.errors.Load(), c.turnOpen)
	}
	// Still streaming: nothing to report yet.
	c.turnOpen = true
	f.Data.Streaming = true
	c.afterResume(context.Background(), &f)
	if state.errors.Load() != 1 {
		t.Errorf("a streaming conversation was reported")
	}
}

// The verdict that decides the exit status: any loss, repeat, unfinished
// conversation, unexpected frame or history problem fails the run.
func TestFailureVerdict(t *testing.T) {
	ok := result{Deliveries: 10}
	if ok.failed() {
		t.Fatalf("a clean run failed: %s", ok.failure())
	}
	for name, r := range map[string]result{
		"lost":       {Deliveries: 10, Lost: 1},
		"repeated":   {Deliveries: 10, Repeats: 1},
		"unfinished": {Deliveries: 10, Unfinished: 1},
		"errors":     {Deliveries: 10, Errors: 1},
		"history":    {Deliveries: 10, HistoryProblems: []string{"gap"}},
		"nothing":    {},
	} {
		if !r.failed() {
			t.Errorf("%s: the run passed", name)
		}
	}
}

// The wait for the last turns ends after its bound however many
// conversations never end: with one time.After for all of them, the
// second such conversation was waited for without end (a TestChaos run
// hung for 10 minutes). Conversations that end are not waited for longer.
func TestWaitLastTurnsIsBounded(t *testing.T) {
	ended := &conversation{finalCh: make(chan struct{})}
	close(ended.finalCh)
	never1 := &conversation{finalCh: make(chan struct{})}
	never2 := &conversation{finalCh: make(chan struct{})}
	const bound = 200 * time.Millisecond
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		waitLastTurns(context.Background(), []*conversation{ended, never1, never2, ended}, bound)
		done <- time.Since(start)
	}()
	select {
	case took := <-done:
		if took < bound {
			t.Fatalf("it returned after %v, before its bound of %v", took, bound)
		}
	case <-time.After(relaytest.Timeout):
		t.Fatalf("the wait for two conversations that never end did not end within %v (bound %v)", relaytest.Timeout, bound)
	}
	start := time.Now()
	waitLastTurns(context.Background(), []*conversation{ended, ended}, time.Hour)
	if took := time.Since(start); took > relaytest.Timeout {
		t.Fatalf("ended conversations were waited for %v", took)
	}
}

// A client goes to its own relay while that one lives; once it is killed,
// its clients spread over the others, and a restart brings them back.
func TestURLForSpreadsAKilledRelaysClients(t *testing.T) {
	s := &runState{}
	for i, u := range []string{"ws://a", "ws://b", "ws://c"} {
		s.setURL(i, u)
	}
	c := func(id, home int) *client { return &client{id: id, home: home} }
	if got := s.urlFor(c(4, 1)); got != "ws://b" {
		t.Errorf("a live relay's client goes to %s", got)
	}
	s.kill(0)
	went := map[string]int{}
	for id := range 10 {
		went[s.urlFor(c(id, 0))]++
	}
	if went["ws://a"] != 0 || went["ws://b"] != 5 || went["ws://c"] != 5 {
		t.Errorf("the killed relay's clients went to %v, want half to b and half to c", went)
	}
	if got := s.anyURL(); got == "ws://a" {
		t.Errorf("anyURL is the killed relay")
	}
	s.setURL(0, "ws://a2")
	if got := s.urlFor(c(3, 0)); got != "ws://a2" {
		t.Errorf("after a restart: %s", got)
	}
}

// Every client and the replay must get the same bytes for a seq.
func TestSameFrame(t *testing.T) {
	var cv conversation
	if !cv.sameFrame(3, []byte(`{"seq":3,"x":1}`)) {
		t.Fatal("the first bytes for seq 3 were refused")
	}
	if !cv.sameFrame(3, []byte(`{"seq":3,"x":1}`)) {
		t.Fatal("the same bytes again were refused")
	}
	if cv.sameFrame(3, []byte(`{"seq":3,"x":2}`)) {
		t.Error("other bytes for seq 3 were taken")
	}
	if !cv.sameFrame(1, []byte(`{"seq":1}`)) {
		t.Error("a first seq below one seen was refused")
	}
}

// A seed draws the same fault every time, within the documented bounds,
// and -fault-for wins over it.
func TestPlanFault(t *testing.T) {
	t.Parallel()
	cfg := config{NATS: true, Relays: 3, KillAt: 5 * time.Second}
	var short, long bool // relay partitions shorter and longer than the lease
	ways := map[string]bool{}
	for _, fault := range faults {
		cfg.Fault = fault
		for seed := uint64(1); seed <= 50; seed++ {
			cfg.Seed = seed
			p := planFault(cfg)
			if again := planFault(cfg); again != p {
				t.Fatalf("%s seed %d: %v then %v", fault, seed, p, again)
			}
			switch fault {
			case faultQuorumLoss:
				if p.For < 10*time.Second || p.For > 60*time.Second {
					t.Errorf("seed %d: quorum lost for %v, want 10–60 s", seed, p.For)
				}
			case faultRelayStop:
				if p.For <= 15*time.Second || p.Relay < 0 || p.Relay >= cfg.Relays {
					t.Errorf("seed %d: relay %d stopped for %v, want past the 15 s lease", seed, p.Relay, p.For)
				}
			case faultRollingRestart:
				if p.Pause < 2*time.Second || p.Pause > 6*time.Second {
					t.Errorf("seed %d: %v between restarts", seed, p.Pause)
				}
			case faultRelayPartition:
				if p.For < 3*time.Second || p.For > 25*time.Second || p.Relay < 0 || p.Relay >= cfg.Relays {
					t.Errorf("seed %d: relay %d cut off for %v, want 3 s to the lease plus 10 s", seed, p.Relay, p.For)
				}
				short = short || p.For < 15*time.Second
				long = long || p.For > 15*time.Second
			case faultNodePartition:
				if p.For < 5*time.Second || p.For > 30*time.Second || p.Node < 0 || p.Node > 2 {
					t.Errorf("seed %d: node %d cut off for %v, want 5–30 s", seed, p.Node, p.For)
				}
			}
			if !oneWay(fault) {
				if p.Way != wayBoth {
					t.Errorf("%s seed %d: %q, want both ways cut", fault, seed, p.Way)
				}
				continue
			}
			// One way: the victim and the time of the same seed's
			// partition of both ways, and a way.
			both := cfg
			both.Fault = map[string]string{faultNodePartitionOneWay: faultNodePartition, faultRelayPartitionOneWay: faultRelayPartition}[fault]
			b := planFault(both)
			if p.Node != b.Node || p.Relay != b.Relay || p.Leader != b.Leader || p.For != b.For || (p.Way != wayIn && p.Way != wayOut) {
				t.Errorf("%s seed %d: %+v, and %s: %+v", fault, seed, p, both.Fault, b)
			}
			ways[fault+" "+p.Way] = true
		}
	}
	if !short || !long {
		t.Errorf("50 seeds drew no relay partition shorter (%v) or longer (%v) than the lease", short, long)
	}
	if len(ways) != 4 {
		t.Errorf("50 seeds drew the one-way partitions %v, want both ways of each", ways)
	}
	cfg.Fault, cfg.FaultFor = faultQuorumLoss, 12*time.Second
	if p := planFault(cfg); p.For != 12*time.Second {
		t.Errorf("-fault-for 12s: %v", p.For)
	}
	for _, bad := range []config{
		{Fault: "partition", NATS: true},
		{Fault: faultQuorumLoss},
		{Fault: faultRelayKill, NATS: true, Relays: 1, KillAt: time.Second},
		{Fault: faultRelayPartition, NATS: true, Relays: 1, KillAt: time.Second},
		{NATS: true, RelayProfile: "load_test.go"}, // a file, not a folder
		{Fault: faultRelayPartitionOneWay, NATS: true, Relays: 1, KillAt: time.Second},
	} {
		bad.Bin, bad.Conns, bad.Convs, bad.Duration, bad.Interval, bad.Deltas, bad.Payload, bad.DialConc = "load_test.go", 10, 2, time.Minute, time.Millisecond, 1, 1, 1
		if bad.Relays == 0 {
			bad.Relays = 3
		}
		if err := bad.validate(); err == nil {
			t.Errorf("%+v: valid", bad)
		}
	}
}

// With the history spread over several event streams (-nats-streams)
// the faults that aim at a stream's leader draw the stream among them
// all, each stream's leader being on a node of its own choosing; the rest
// of a seed's fault is the same as on one stream. On one stream it is
// PD_EVENTS, and the other faults name none.
func TestPlanFaultStreams(t *testing.T) {
	t.Parallel()
	for _, fault := range faults {
		drawn := map[string]bool{}
		for seed := uint64(1); seed <= 50; seed++ {
			one := config{NATS: true, Relays: 3, KillAt: 5 * time.Second, Fault: fault, Seed: seed}
			four := one
			four.NATSStreams = 4
			p1, p4 := planFault(one), planFault(four)
			drawn[p4.Stream] = true
			if !leaderFault(fault) {
				if p1.Stream != "" || p4.Stream != "" {
					t.Errorf("%s seed %d names streams %q and %q", fault, seed, p1.Stream, p4.Stream)
				}
				continue
			}
			if p1.Stream != "PD_EVENTS" {
				t.Errorf("%s seed %d on one stream: %q", fault, seed, p1.Stream)
			}
			same := p4
			same.Stream = p1.Stream
			if same != p1 {
				t.Errorf("%s seed %d: %+v on four streams, %+v on one", fault, seed, p4, p1)
			}
		}
		if leaderFault(fault) && len(drawn) != 4 {
			t.Errorf("%s: 50 seeds drew the streams %v, want all four", fault, drawn)
		}
	}
	p := planFault(config{NATS: true, Relays: 3, KillAt: 5 * time.Second, Fault: faultLeaderKill, Seed: 1, NATSStreams: 4})
	if p.Stream != "PD_EVENTS" && !strings.Contains(p.String(), p.Stream) {
		t.Errorf("the plan %q does not say whose leader is killed (%s)", p.String(), p.Stream)
	}
}

// TestChaos is a short `make chaos` in `make test`: each fault once on a
// fresh cluster, with the clients' checks and the replay from every relay
// (docs/reliability.md, Faults); relay-kill is TestRunNATS, and the
// leader's death is relay's TestClusterNodeDies. The partitions are
// skipped, saying why, where network namespaces cannot be made (not
// root). The clients are spread (-placement spread): two of three watch
// their conversation on a relay that follows it, so each fault meets the
// following path too (the conn placement put all 12 conversations'
// clients on their owners, where nothing was followed).
func TestChaos(t *testing.T) {
	if _, err := natstest.Binary(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	bin := testbin.Build(t)
	for _, tc := range []struct {
		fault string
		seed  uint64
		dur   time.Duration
		// lease is the relays' --nats-lease. A deploy hands conversations
		// over on SIGTERM and owes nothing to the lease, so rolling-restart
		// runs on the default one: a 4 s lease lapses on a loaded machine
		// (CPU pressure over 90%), and the takeovers that follow are right
		// but are not what this fault tests.
		lease time.Duration
	}{
		{faultRelayStop, 2, 8 * time.Second, 4 * time.Second},
		{faultQuorumLoss, 3, 10 * time.Second, 4 * time.Second},
		{faultRollingRestart, 4, 0, jetstream.DefaultLease},
		// A node cut off for less than the lease: the relay on it must
		// move to another node and keep its lease (the default, as a
		// node's loss owes nothing to the lease either).
		{faultNodePartition, 5, 10 * time.Second, jetstream.DefaultLease},
		// A relay cut off for twice its lease: taken over, then fenced.
		{faultRelayPartition, 6, 8 * time.Second, 4 * time.Second},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			if partition(tc.fault) {
				if err := islandsAvailable(); err != nil {
					t.Skipf("skipping: %v", err)
				}
			}
			cfg := config{Bin: bin, Conns: 60, Convs: 12, Duration: 20 * time.Second, KillAt: 4 * time.Second,
				NATS: true, Relays: 3, NATSLease: tc.lease, Fault: tc.fault, FaultFor: tc.dur, Seed: tc.seed, Placement: placeSpread,
				Deltas: 40, Interval: 20 * time.Millisecond, Payload: 24, DialConc: 16, Drain: 60 * time.Second, VerifyHistory: true}
			if err := cfg.validate(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			res.print(&out)
			t.Log("\n" + out.String())
			if res.failed() {
				t.Fatalf("the run failed: %s", res.failure())
			}
			if !strings.Contains(out.String(), "VERDICT "+tc.fault+" seed=") || res.Replayed != cfg.Relays || len(res.FaultEvents) < 2 {
				t.Errorf("verdict, %d relays replayed, fault events %q", res.Replayed, res.FaultEvents)
			}
			if res.Dir != "" {
				os.RemoveAll(res.Dir)
			}
		})
	}
}
