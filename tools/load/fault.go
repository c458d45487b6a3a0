package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/ctxtime"
)

// The faults a -nats run injects (-fault), the project's fault-injection
// suite (`make chaos`, docs/reliability.md). Each is what an operator's
// cluster meets; the clients check what they get as in every run
// (gapless, once, in order, the same bytes as every other client and as
// the replay from every relay at the end).
const (
	faultNone           = "none"
	faultRelayKill      = "relay-kill"      // SIGKILL relay 1; it stays dead, its clients move
	faultRelayStop      = "relay-stop"      // SIGSTOP a relay for -fault-for (past its lease: it is taken over), then SIGCONT
	faultLeaderKill     = "leader-kill"     // SIGKILL an events stream's leader node (the plan's Stream), restart it after -fault-for
	faultQuorumLoss     = "quorum-loss"     // SIGKILL two of the three nodes for -fault-for (10–60 s by the seed), restart them
	faultRollingRestart = "rolling-restart" // SIGTERM each relay in turn and start it again on its data dir, as a deploy does
	faultNodePartition  = "node-partition"  // cut a node off from the other nodes and the relays (an island: island.go) for -fault-for, then heal
	faultRelayPartition = "relay-partition" // cut a relay off from the cluster and its clients for -fault-for (shorter or longer than its lease), then heal
	// The same partitions one way only: the seed draws whether the
	// packets into the victim or out of it are dropped (island.cut).
	faultNodePartitionOneWay  = "node-partition-oneway"
	faultRelayPartitionOneWay = "relay-partition-oneway"
)

// faults are the -fault values, in the order `make chaos` runs them.
var faults = []string{faultRelayKill, faultRelayStop, faultLeaderKill, faultQuorumLoss, faultRollingRestart, faultNodePartition, faultRelayPartition,
	faultNodePartitionOneWay, faultRelayPartitionOneWay}

// partition says whether a fault cuts a process off the network, which
// needs it started in a network namespace of its own (an island).
func partition(fault string) bool { return nodePartition(fault) || relayPartition(fault) }

// nodePartition says whether a fault cuts a node off, either way or one.
func nodePartition(fault string) bool {
	return fault == faultNodePartition || fault == faultNodePartitionOneWay
}

// relayPartition says whether a fault cuts a relay off, either way or one.
func relayPartition(fault string) bool {
	return fault == faultRelayPartition || fault == faultRelayPartitionOneWay
}

// oneWay says whether a fault is a partition of one direction only.
func oneWay(fault string) bool {
	return fault == faultNodePartitionOneWay || fault == faultRelayPartitionOneWay
}

// relayLostAllowed says whether a fault loses a relay, so that a turn closed
// "relay lost" by a takeover is what a client should see. Under the others
// no relay was lost, and such a closing is a failure.
func relayLostAllowed(fault string) bool {
	return fault == faultRelayKill || fault == faultRelayStop || relayPartition(fault)
}

// storeErrorAllowed says whether a fault makes the history store
// unreachable long enough that a running turn may end with copilot:error
// (the history could not be saved) and idle status error, and a prompt be
// refused until it is back. A relay cut off the network cannot reach the
// store either: its turns may end so (its clients, moved to the others,
// get the closing events from the stream).
func storeErrorAllowed(fault string) bool {
	return fault == faultQuorumLoss || relayPartition(fault)
}

// faultPlan is what the seed chose: when the fault starts, how long it
// lasts, and its victims.
type faultPlan struct {
	Fault string        `json:"fault"`
	Seed  uint64        `json:"seed"`
	At    time.Duration `json:"-"`
	For   time.Duration `json:"-"`
	// Relay is the relay stopped (relay-stop) or cut off (relay-partition)
	// or, for relay-kill, 0.
	Relay int `json:"relay"`
	// Node is the node cut off (node-partition), and Leader whether it is
	// made the leader of the events stream Stream first.
	Node   int  `json:"node"`
	Leader bool `json:"leader"`
	// Pause is the time between two relays' restarts (rolling-restart).
	Pause time.Duration `json:"-"`
	// Way is which packets a partition drops: wayBoth, or, for the
	// one-way partitions, wayIn or wayOut (island.cut).
	Way string `json:"way,omitempty"`
	// Stream is the events stream whose leader the fault aims at
	// (leader-kill, quorum-loss, the node partitions): PD_EVENTS, or,
	// when the history is spread over several (-nats-streams), the one
	// the seed draws among them all.
	Stream string `json:"stream,omitempty"`
}

func (p faultPlan) String() string {
	switch p.Fault {
	case faultRelayKill:
		return fmt.Sprintf("%s at %v (relay 1)", p.Fault, p.At)
	case faultRelayStop, faultRelayPartition:
		return fmt.Sprintf("%s at %v for %v (relay %d)", p.Fault, p.At, p.For, p.Relay+1)
	case faultRelayPartitionOneWay:
		return fmt.Sprintf("%s at %v for %v (relay %d, %s)", p.Fault, p.At, p.For, p.Relay+1, wayString(p.Way))
	case faultNodePartition, faultNodePartitionOneWay:
		role := "a follower"
		if p.Leader {
			role = leaderName(p.Stream)
		}
		if p.Fault == faultNodePartitionOneWay {
			role += ", " + wayString(p.Way)
		}
		return fmt.Sprintf("%s at %v for %v (node n%d, %s)", p.Fault, p.At, p.For, p.Node+1, role)
	case faultLeaderKill, faultQuorumLoss:
		if p.Stream != eventsStream {
			return fmt.Sprintf("%s at %v for %v (%s)", p.Fault, p.At, p.For, leaderName(p.Stream))
		}
		return fmt.Sprintf("%s at %v for %v", p.Fault, p.At, p.For)
	case faultRollingRestart:
		return fmt.Sprintf("%s from %v, %v between relays", p.Fault, p.At, p.Pause)
	}
	return p.Fault
}

// wayString says what a one-way partition drops.
func wayString(way string) string {
	if way == wayIn {
		return "only the packets into it dropped"
	}
	return "only the packets out of it dropped"
}

// planFault draws the fault's timing and victims from the seed; -fault-at
// and -fault-for, when given, win.
func planFault(cfg config) faultPlan {
	r := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	p := faultPlan{Fault: cfg.Fault, Seed: cfg.Seed, At: cfg.KillAt, For: cfg.FaultFor, Way: wayBoth}
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(r.Int64N(int64(hi-lo)+1)).Round(time.Second)
	}
	lease := cfg.NATSLease
	if lease == 0 {
		lease = 15 * time.Second
	}
	switch p.Fault {
	case faultRelayStop:
		p.Relay = r.IntN(cfg.Relays)
		if p.For == 0 {
			p.For = between(lease+2*time.Second, lease+10*time.Second)
		}
	case faultRelayPartition, faultRelayPartitionOneWay:
		// Shorter than the lease (the relay keeps its conversations and
		// its queued appends go out when it heals) or longer (the others
		// take them over and fence it), by the seed.
		p.Relay = r.IntN(cfg.Relays)
		if p.For == 0 {
			p.For = between(3*time.Second, lease+10*time.Second)
		}
	case faultNodePartition, faultNodePartitionOneWay:
		p.Node = r.IntN(3)
		p.Leader = r.IntN(2) == 0
		if p.For == 0 {
			p.For = between(5*time.Second, 30*time.Second)
		}
	case faultLeaderKill:
		if p.For == 0 {
			p.For = between(3*time.Second, 15*time.Second)
		}
	case faultQuorumLoss:
		if p.For == 0 {
			p.For = between(10*time.Second, 60*time.Second)
		}
	case faultRollingRestart:
		p.Pause = between(2*time.Second, 6*time.Second)
	}
	if oneWay(p.Fault) {
		// Drawn last: a seed cuts the same victim for as long as the
		// partition of both ways does, so the two runs compare.
		p.Way = []string{wayIn, wayOut}[r.IntN(2)]
	}
	if leaderFault(p.Fault) {
		p.Stream = eventsStream
		if cfg.NATSStreams > 1 {
			// Each stream has a leader of its own, spread over the
			// nodes: any of them may be the one lost (drawn after the
			// rest, so a seed's fault is otherwise the same).
			p.Stream = streamName(r.IntN(cfg.NATSStreams))
		}
	}
	return p
}

// leaderFault says whether a fault aims at an events stream's leader.
func leaderFault(fault string) bool {
	return fault == faultLeaderKill || fault == faultQuorumLoss || nodePartition(fault)
}

// streamName is the k-th events stream's name, as the relays' JetStream
// history names it (PD_EVENTS, PD_EVENTS_1, …).
func streamName(k int) string {
	if k == 0 {
		return eventsStream
	}
	return eventsStream + "_" + strconv.Itoa(k)
}

// leaderName says whose leader a node is, in the fault's words.
func leaderName(stream string) string {
	if stream == eventsStream || stream == "" {
		return "the events stream's leader"
	}
	return "the leader of events stream " + stream
}

// stopWait is how long a relay may take to exit after SIGTERM before it is
// killed: a draining relay finishes its running turns first.
const stopWait = 3 * time.Minute

// fleet is the run's relays, shared by the main loop and the fault's
// goroutine.
type fleet struct {
	mu     sync.Mutex
	relays []*relayProc
}

func (f *fleet) get(i int) *relayProc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.relays[i]
}

func (f *fleet) set(i int, p *relayProc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.relays[i] = p
}

// faultRun is the state of one injected fault.
type faultRun struct {
	plan    faultPlan
	cfg     config
	dir     string
	log     *slog.Logger
	cluster *natsCluster
	island  *island // the partitioned process's network namespace
	relays  *fleet
	state   *runState
	usage   *relayUsage
	start   func(i int, logName string) (*relayProc, error)

	mu       sync.Mutex
	events   []string // what was done, when (for the report)
	warnings []string // warnings of relays stopped or killed on the way
	restarts int
	began    time.Time
	ended    time.Time
}

func (f *faultRun) note(format string, a ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	msg := fmt.Sprintf("%6.1fs ", time.Since(f.began).Seconds()) + fmt.Sprintf(format, a...)
	f.events = append(f.events, msg)
	f.log.Warn("load: fault: " + msg)
}

// inject runs the fault (its start is the caller's timer) and returns once
// the cluster and the relays are whole again, or ctx ends.
func (f *faultRun) inject(ctx context.Context) error {
	f.began = time.Now()
	f.state.faulty.Store(true)
	defer func() {
		f.mu.Lock()
		f.ended = time.Now()
		f.mu.Unlock()
		f.state.recoveredAt.Store(time.Now().UnixNano())
		f.state.faulty.Store(false)
	}()
	switch f.plan.Fault {
	case faultRelayStop:
		f.state.killed.Store(true) // its turns are closed "relay lost" by a takeover
		return f.relayStop(ctx)
	case faultLeaderKill:
		return f.nodesDown(ctx, 1)
	case faultQuorumLoss:
		return f.nodesDown(ctx, 2)
	case faultRollingRestart:
		return f.rollingRestart(ctx)
	case faultRelayPartition, faultRelayPartitionOneWay:
		f.state.killed.Store(true) // past its lease its turns are closed "relay lost" by a takeover
		return f.relayPartition(ctx)
	case faultNodePartition, faultNodePartitionOneWay:
		return f.nodePartition(ctx)
	}
	return fmt.Errorf("unknown fault %q", f.plan.Fault)
}

// relayStop pauses a relay past its lease: its clients hear nothing (they
// leave it after a few silent seconds, as a client does), another relay
// takes its conversations over, and when it goes on its appends are fenced.
func (f *faultRun) relayStop(ctx context.Context) error {
	i := f.plan.Relay
	p := f.relays.get(i)
	f.state.kill(i)
	if err := p.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	f.note("relay %d (pid %d) SIGSTOPped", i+1, p.Pid())
	sleep(ctx, f.plan.For)
	if err := p.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	f.note("relay %d SIGCONTinued", i+1)
	f.state.setURL(i, p.URL)
	return nil
}

// relayPartition cuts a relay off the network: its clients hear nothing
// and the balancer sends them to the others, its lease renewals are lost,
// and past its lease the others take its conversations over. When the
// partition heals the relay must fence itself, or find its lease held.
func (f *faultRun) relayPartition(ctx context.Context) error {
	i := f.plan.Relay
	p := f.relays.get(i)
	f.state.kill(i)
	if err := f.island.cut(f.plan.Way); err != nil {
		return err
	}
	f.note("relay %d (pid %d) cut off the network%s", i+1, p.Pid(), wayNote(f.plan.Way))
	sleep(ctx, f.plan.For)
	if err := f.island.heal(); err != nil {
		return err
	}
	f.note("relay %d's partition healed", i+1)
	f.state.setURL(i, p.URL)
	return nil
}

// nodePartition cuts a node off from the other nodes and from the relays
// connected to it (relay i lists node i first, so one relay at least is):
// the two left keep a quorum, and the relays on the lost node must move
// to another before their leases lapse.
func (f *faultRun) nodePartition(ctx context.Context) error {
	name := f.cluster.c.Nodes[f.plan.Node].Name
	if err := f.placeLeader(ctx); err != nil {
		f.note("%s could not be placed as planned: %v", leaderName(f.plan.Stream), err)
	}
	role := "a follower of events stream " + f.stream()
	if order, err := f.leaderFirst(ctx); err == nil && order[0] == f.plan.Node {
		role = leaderName(f.plan.Stream)
	}
	if err := f.island.cut(f.plan.Way); err != nil {
		return err
	}
	f.note("node %s (%s) cut off the network%s", name, role, wayNote(f.plan.Way))
	sleep(ctx, f.plan.For)
	if err := f.island.heal(); err != nil {
		return err
	}
	f.note("node %s's partition healed", name)
	if err := f.cluster.waitReady(2 * time.Minute); err != nil {
		return err
	}
	f.note("every node answers")
	return nil
}

// wayNote is what a fault event adds for a one-way partition.
func wayNote(way string) string {
	if way == wayBoth {
		return ""
	}
	return " (" + wayString(way) + ")"
}

// stream is the events stream whose leader the fault aims at.
func (f *faultRun) stream() string {
	if f.plan.Stream == "" {
		return eventsStream
	}
	return f.plan.Stream
}

// placeLeader makes the node to be cut off the plan's stream's leader, or
// a follower, as the plan says: the stream leader steps down in favour of
// the one wanted (a placement preference, NATS 2.11+). A partition of the
// leader forces an election on the other side; a follower's does not.
func (f *faultRun) placeLeader(ctx context.Context) error {
	nc, js, err := f.cluster.c.JetStream(0)
	if err != nil {
		return err
	}
	defer nc.Close()
	want := f.plan.Node
	if !f.plan.Leader {
		want = (f.plan.Node + 1) % len(f.cluster.c.Nodes)
	}
	for attempt := 0; attempt < 10 && ctx.Err() == nil; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		leader, _, err := f.cluster.c.StreamLeader(rctx, js, f.stream())
		cancel()
		if err == nil && (leader == want || (!f.plan.Leader && leader != f.plan.Node)) {
			return nil
		}
		if err == nil {
			req := fmt.Sprintf(`{"placement":{"preferred":%q}}`, f.cluster.c.Nodes[want].Name)
			if _, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+f.stream(), []byte(req), 5*time.Second); err != nil {
				f.log.Debug("load: stream leader step-down", "err", err)
			}
		}
		sleep(ctx, time.Second)
	}
	return fmt.Errorf("the leader is not where it was asked to be after 10 tries")
}

// eventsStream is the relays' events stream (jetstream's default names),
// the first of them when there are several (streamName).
const eventsStream = "PD_EVENTS"

// nodesDown SIGKILLs n nodes, the plan's stream's leader first, and starts
// them again after the plan's time.
func (f *faultRun) nodesDown(ctx context.Context, n int) error {
	victims, err := f.leaderFirst(ctx)
	if err != nil {
		return err
	}
	victims = victims[:n]
	for _, v := range victims {
		f.cluster.c.Kill(v)
		f.note("node %s SIGKILLed", f.cluster.c.Nodes[v].Name)
	}
	sleep(ctx, f.plan.For)
	for _, v := range victims {
		if err := f.cluster.restart(v); err != nil {
			return err
		}
		f.note("node %s started again", f.cluster.c.Nodes[v].Name)
	}
	if err := f.cluster.waitReady(2 * time.Minute); err != nil {
		return err
	}
	f.note("every node answers")
	return nil
}

// leaderFirst lists the nodes, the plan's stream's leader first.
func (f *faultRun) leaderFirst(ctx context.Context) ([]int, error) {
	nc, js, err := f.cluster.c.JetStream(0)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	var leader int
	for attempt := 0; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		leader, _, err = f.cluster.c.StreamLeader(rctx, js, f.stream())
		cancel()
		if err == nil || attempt == 10 || ctx.Err() != nil {
			break
		}
		sleep(ctx, time.Second)
	}
	if err != nil {
		return nil, fmt.Errorf("finding the leader of events stream %s: %w", f.stream(), err)
	}
	order := []int{leader}
	for i := range f.cluster.c.Nodes {
		if i != leader {
			order = append(order, i)
		}
	}
	return order, nil
}

// rollingRestart is a deploy: each relay in turn gets SIGTERM, and a new
// one starts on its data dir once it has exited; the balancer (urlFor)
// sends its clients to the others meanwhile.
func (f *faultRun) rollingRestart(ctx context.Context) error {
	for i := range f.cfg.Relays {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p := f.relays.get(i)
		f.state.kill(i)
		f.usage.end(p)
		f.note("relay %d (pid %d) SIGTERM", i+1, p.Pid())
		err := p.Stop(stopWait)
		f.mu.Lock()
		f.warnings = append(f.warnings, p.Warnings()...)
		f.mu.Unlock()
		if err != nil {
			f.note("relay %d: %v", i+1, err)
		} else {
			f.note("relay %d exited", i+1)
		}
		np, err := f.start(i, fmt.Sprintf("relay%d-restart.log", i+1))
		if err != nil {
			return fmt.Errorf("starting relay %d again: %w", i+1, err)
		}
		f.relays.set(i, np)
		f.usage.begin(np)
		f.state.setURL(i, np.URL)
		f.mu.Lock()
		f.restarts++
		f.mu.Unlock()
		f.note("relay %d started again (pid %d)", i+1, np.Pid())
		sleep(ctx, f.plan.Pause)
	}
	return nil
}

func (f *faultRun) report() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.events)
}

// sleep pauses for d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) { _ = ctxtime.Sleep(ctx, d) }

// validFault checks -fault.
func validFault(name string) error {
	if name == "" || name == faultNone || slices.Contains(faults, name) {
		return nil
	}
	return fmt.Errorf("-fault %q: want one of %s", name, strings.Join(faults, ", "))
}
