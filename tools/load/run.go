package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/internal/procstat"
	"github.com/pilotdesk/pilotdesk/internal/relayproc"
)

// waitLastTurns waits until every conversation's last turn has ended, for
// at most d in all (or until ctx ends), however many never end.
func waitLastTurns(ctx context.Context, convs []*conversation, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for _, conv := range convs {
		select {
		case <-conv.finalCh:
		case <-ctx.Done():
			return
		}
	}
}

// lastTurnGrace is how much longer than two turn times and the drain the
// run waits for the conversations' last turns to end before it counts the
// rest unfinished: a command waits up to 30 s for an owner that does not
// answer, a takeover up to a lease (15 s by default) and its retries.
const lastTurnGrace = 2 * time.Minute

// loadRun is one run's state, shared by the steps of run: what it started,
// the clients, and what it measures.
type loadRun struct {
	cfg   config
	log   *slog.Logger
	dir   string
	token string
	res   *result
	keep  bool // keep dir (the relays' logs) after the run: -keep, or a failure
	state *runState
	plan  faultPlan

	cluster   *natsCluster         // with -nats
	island    *island              // a partition's victim's network namespace
	isolated  int                  // the node in the island (node-partition), or -1
	storeArgs func(i int) []string // relay i's history flags
	logName   func(i int) string   // relay i's log file in dir
	relays    []*relayProc         // nil once killed for good or stopped

	convs   []*conversation
	clients []*client
	wg      sync.WaitGroup // the clients' loops

	usage    relayUsage    // the relays clients use
	profiles relayProfiles // -relay-profile's fetches
	idle     []relayUsage  // the idle relays (-idle-relays)
	killedAt time.Time     // when -kill-at killed a relay

	// The fault injected at -kill-at with -fault, while it runs.
	fault     *faultRun
	faultDone chan error
}

// runStart is what the run's figures are measured from.
type runStart struct {
	t0    time.Time
	nats0 time.Duration // the nats-servers' CPU
	self0 time.Duration // the load tool's CPU
}

// run starts the relay (or the cluster and its relays), loads it and
// measures.
func run(ctx context.Context, cfg config, log *slog.Logger) (*result, error) {
	if err := raiseFileLimit(cfg.Conns); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pilotdesk-load-")
	if err != nil {
		return nil, err
	}
	r := newLoadRun(cfg, log, dir)
	defer func() {
		if r.keep {
			r.res.Dir = dir
			return
		}
		os.RemoveAll(dir)
	}()
	if partition(r.plan.Fault) {
		if r.island, err = newIsland(); err != nil {
			return nil, fmt.Errorf("-fault %s: %w", r.plan.Fault, err)
		}
		defer r.island.close() // after the relays and the nodes have stopped
		if nodePartition(r.plan.Fault) {
			r.isolated = r.plan.Node
		}
	}
	if cfg.NATS {
		if r.cluster, err = startNATSCluster(r.island, r.isolated); err != nil {
			return nil, err
		}
		defer r.cluster.stop() // after the relays (defers run last first)
		r.useCluster()
	}
	r.relays = make([]*relayProc, r.res.Relays+r.res.IdleRelays)
	// Whichever relays run are killed on every return.
	defer r.killRelays()
	if err := r.startRelays(ctx); err != nil {
		r.keep = true
		return nil, err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.makeClients()
	if err := r.connect(runCtx); err != nil {
		cancel()
		r.wg.Wait()
		r.keep = true
		return nil, err
	}
	start := r.beginStreaming(runCtx)
	faultCtx, faultCancel := context.WithCancel(runCtx)
	defer func() {
		faultCancel()
		if r.faultDone != nil {
			<-r.faultDone
		}
	}()
	if err := r.stream(ctx, faultCtx, start.t0); err != nil {
		r.keep = true
		cancel()
		r.wg.Wait()
		r.state.timers.Wait()
		return nil, err
	}
	r.endStreaming(start)
	r.drain(ctx)
	cancel()
	r.wg.Wait()
	r.state.timers.Wait()
	r.verify(ctx)
	r.stopRelays()
	r.account()
	if r.res.failed() {
		r.keep = true
	}
	return r.res, nil
}

// newLoadRun sets a run up: its result's settings, its token and, with
// -fault, its fault's plan.
func newLoadRun(cfg config, log *slog.Logger, dir string) *loadRun {
	res := &result{
		Conns: cfg.Conns, Convs: cfg.Convs, Duration: cfg.Duration.String(), History: "sqlite", Relays: 1,
		Deltas: cfg.Deltas, Interval: cfg.Interval.String(), Payload: cfg.Payload,
	}
	switch {
	case cfg.Memory:
		res.History = "memory"
	case cfg.NATS:
		res.History, res.Relays, res.IdleRelays = "nats", cfg.Relays, cfg.IdleRelays
		res.Placement = cfg.Placement
	}
	token := relayproc.NewToken()
	r := &loadRun{
		cfg: cfg, log: log, dir: dir, token: token, res: res,
		state:     &runState{token: token, nats: cfg.NATS, pingEvery: 30 * time.Second},
		storeArgs: func(int) []string { return sqliteArgs(cfg, dir) },
		logName:   func(int) string { return "relay.log" },
		isolated:  -1,
		keep:      cfg.Keep,
	}
	if cfg.NATS && cfg.Fault != "" && cfg.Fault != faultNone {
		r.plan = planFault(cfg)
		res.Fault, res.Seed = r.plan.String(), r.plan.Seed
		r.state.fault = r.plan.Fault
		// Clients leave a silent relay after 3 pings, as the app's do.
		r.state.pingEvery = 2 * time.Second
		log.Info("load: fault planned", "fault", r.plan.String(), "seed", r.plan.Seed)
	}
	return r
}

// useCluster points the relays at the started nats-server cluster.
func (r *loadRun) useCluster() {
	r.log.Info("load: 3-node nats-server cluster started", "urls", r.cluster.c.URLs())
	r.cfg.natsPassword = r.cluster.c.Password
	cfg, dir := r.cfg, r.dir
	r.storeArgs = func(i int) []string { return r.cluster.relayArgs(cfg, dir, i, r.isolated) }
	r.logName = func(i int) string { return fmt.Sprintf("relay%d.log", i+1) }
}

// startRelay starts relay i's process, logging to logName: in the island
// if it is relay-partition's victim.
func (r *loadRun) startRelay(ctx context.Context, i int, logName string) (*relayProc, error) {
	var is *island
	if relayPartition(r.plan.Fault) && i == r.plan.Relay {
		is = r.island
	}
	return startRelay(ctx, r.cfg, r.dir, r.token, logName, r.storeArgs(i), is)
}

// startRelays starts every relay: the ones clients use, then the idle ones.
func (r *loadRun) startRelays(ctx context.Context) error {
	for i := range r.relays {
		p, err := r.startRelay(ctx, i, r.logName(i))
		if err != nil {
			return err
		}
		r.relays[i] = p
		if i < r.res.Relays {
			r.state.setURL(i, p.URL) // an idle relay's is nobody's
		}
		r.log.Info("load: relay started", "idle", i >= r.res.Relays, "url", p.URL, "pid", p.Pid(), "history", r.res.History,
			"conns", r.cfg.Conns, "convs", r.cfg.Convs, "duration", r.cfg.Duration)
	}
	return nil
}

func (r *loadRun) killRelays() {
	for _, p := range r.relays {
		if p != nil {
			p.Kill()
		}
	}
}

func (r *loadRun) logPaths() string {
	var ps []string
	for _, p := range r.relays {
		if p != nil {
			ps = append(ps, p.LogPath)
		}
	}
	return strings.Join(ps, ", ")
}

// makeClients makes the conversations and their connections.
func (r *loadRun) makeClients() {
	r.convs = make([]*conversation, r.cfg.Convs)
	for i := range r.convs {
		r.convs[i] = &conversation{id: uuid.NewString(), index: i, finalCh: make(chan struct{})}
		r.convs[i].final.Store(-1)
	}
	r.clients = make([]*client, r.cfg.Conns)
	for i := range r.clients {
		conv := r.convs[i%r.cfg.Convs]
		// Connection i watches conversation i mod convs, and its
		// first (i < convs) sends its prompts: the sender's relay
		// writes the conversation first and owns it. Which relays its
		// other connections go to is -placement's (homeOf).
		c := &client{id: i, home: homeOf(r.cfg.Placement, i, r.cfg.Convs, r.res.Relays), conv: conv, sender: i < r.cfg.Convs, log: r.log, run: r.state, ready: make(chan error, 1)}
		if c.sender {
			conv.sender = c
		}
		r.clients[i] = c
	}
}

// connect starts every client's loop (they run until runCtx ends) and
// waits until each has subscribed.
func (r *loadRun) connect(runCtx context.Context) error {
	start := time.Now()
	dialSem := make(chan struct{}, r.cfg.DialConc)
	for _, c := range r.clients {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			c.loop(runCtx, dialSem)
		}()
	}
	var setupErr error
	for _, c := range r.clients {
		select {
		case err := <-c.ready:
			setupErr = errors.Join(setupErr, err)
		case <-time.After(2 * time.Minute):
			setupErr = errors.Join(setupErr, fmt.Errorf("connection %d: not subscribed within 2 minutes", c.id))
		}
		if setupErr != nil {
			break
		}
	}
	r.res.ConnectSeconds = time.Since(start).Seconds()
	if setupErr != nil {
		return fmt.Errorf("connecting: %w (relay logs: %s)", setupErr, r.logPaths())
	}
	r.log.Info("load: connected and subscribed", "conns", r.cfg.Conns, "seconds", fmt.Sprintf("%.1f", r.res.ConnectSeconds))
	for _, p := range r.relays {
		kib, _ := procstat.Field(p.Pid(), "VmRSS")
		r.res.RelayIdleRSSKiB = max(r.res.RelayIdleRSSKiB, kib)
	}
	return nil
}

// beginStreaming notes where the figures start from and sends every
// conversation's first prompt.
func (r *loadRun) beginStreaming(runCtx context.Context) runStart {
	r.res.CPUs, r.res.LoadAvgBefore = runtime.NumCPU(), loadAverage()
	// Stream: every sender starts a turn, and another when one ends.
	r.usage = relayUsage{start: map[int]time.Duration{}}
	r.idle = make([]relayUsage, r.res.IdleRelays)
	for i, p := range r.relays {
		if i < r.res.Relays {
			r.usage.begin(p)
		} else {
			r.idle[i-r.res.Relays] = relayUsage{start: map[int]time.Duration{}}
			r.idle[i-r.res.Relays].begin(p)
		}
	}
	var s runStart
	if r.cluster != nil {
		s.nats0 = r.cluster.cpu()
	}
	s.self0 = selfCPU()
	s.t0 = time.Now()
	if r.cfg.RelayProfile != "" {
		r.profiles.start(runCtx, r.log, r.cfg.RelayProfile, r.cfg.profileTag, r.relays, r.cfg.Duration-time.Second)
	}
	for _, conv := range r.convs {
		if err := conv.sender.sendPrompt(runCtx); err != nil {
			r.state.errors.Add(1)
			r.log.Error("load: first prompt", "err", err)
		}
	}
	return s
}

// stream lets the conversations stream for -duration, with the relay kill
// or the fault at -kill-at; a fault that runs past -duration is let end
// first, and streaming goes on for a while after it.
func (r *loadRun) stream(ctx, faultCtx context.Context, t0 time.Time) error {
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	deadline := time.NewTimer(r.cfg.Duration)
	var killAt <-chan time.Time
	if r.cfg.KillAt > 0 {
		killAt = time.After(r.cfg.KillAt)
	}
	deadlineSeen := false
	for {
		select {
		case <-deadline.C:
			if r.faultDone != nil {
				deadlineSeen = true // the run ends once the fault is over
				continue
			}
			return nil
		case err := <-r.faultDone:
			r.faultDone = nil
			r.res.FaultEvents = r.fault.report()
			r.res.KillWarnings = append(r.res.KillWarnings, r.fault.warnings...)
			if err != nil {
				r.log.Error("load: the fault could not be injected", "err", err)
				r.state.errors.Add(1)
			}
			// Streaming goes on for a while after the fault, so that
			// the run shows it does.
			if deadlineSeen {
				deadline.Reset(20 * time.Second)
			}
		case <-ctx.Done():
			r.log.Warn("load: interrupted; finishing early")
			return nil
		case <-progress.C:
			r.log.Info("load: running", "elapsed", time.Since(t0).Round(time.Second), "deliveries", sumDelivered(r.clients))
		case <-killAt:
			if err := r.strike(ctx, faultCtx); err != nil {
				return err
			}
		}
	}
}

// strike is -kill-at: it starts the fault (with -fault), or SIGKILLs the
// first relay, which stays dead with -nats and is restarted on its data dir
// otherwise.
func (r *loadRun) strike(ctx, faultCtx context.Context) error {
	cfg, plan := r.cfg, r.plan
	if cfg.NATS && plan.Fault != "" && plan.Fault != faultRelayKill {
		r.fault = &faultRun{plan: plan, cfg: cfg, dir: r.dir, log: r.log, cluster: r.cluster, island: r.island, relays: &fleet{relays: r.relays},
			state: r.state, usage: &r.usage, start: func(i int, logName string) (*relayProc, error) {
				return r.startRelay(ctx, i, logName)
			}}
		r.faultDone = make(chan error, 1)
		go func() { r.faultDone <- r.fault.inject(faultCtx) }()
		return nil
	}
	res := r.res
	victim := r.relays[0]
	r.usage.end(victim)
	r.state.killed.Store(true)
	res.Kills++
	if cfg.NATS {
		// SIGKILL one of the relays; it stays dead. Its clients
		// reconnect to the others (urlFor), which take its
		// conversations over once its lease lapses.
		r.state.kill(0)
		r.killedAt = time.Now()
		victim.Kill()
		r.relays[0] = nil
		for _, c := range r.clients {
			if c.home == 0 {
				res.KilledClients++
			}
		}
		res.KillWarnings = append(res.KillWarnings, victim.Warnings()...)
		r.log.Warn("load: relay 1 killed with SIGKILL; its clients move to the other relays", "clients", res.KilledClients)
		return nil
	}
	// SIGKILL in the middle of the streams, restart on the same
	// data dir; the clients resume with sinceSeq.
	victim.Kill()
	r.killedAt = time.Now()
	r.log.Warn("load: relay killed with SIGKILL; restarting it on the same data dir")
	res.KillWarnings = append(res.KillWarnings, victim.Warnings()...)
	r.relays[0] = nil
	p, err := r.startRelay(ctx, 0, "relay-after-kill.log")
	if err != nil {
		return fmt.Errorf("restarting the relay after SIGKILL: %w", err)
	}
	r.relays[0] = p
	res.RestartSeconds = time.Since(r.killedAt).Seconds()
	r.state.setURL(0, p.URL)
	r.usage.begin(p)
	r.log.Info("load: relay restarted", "url", p.URL, "seconds", fmt.Sprintf("%.2f", res.RestartSeconds))
	return nil
}

// endStreaming stops new prompts and takes the figures of the run.
func (r *loadRun) endStreaming(s runStart) {
	res := r.res
	r.state.stopping.Store(true)
	elapsed := time.Since(s.t0)
	res.RunSeconds = elapsed.Seconds()
	res.LoadAvgAfter = loadAverage()
	res.CPUPressure = cpuPressure()
	res.Deliveries = sumDelivered(r.clients)
	for i, p := range r.relays {
		switch {
		case p == nil:
		case i < res.Relays:
			r.usage.end(p)
		default:
			r.idle[i-res.Relays].end(p)
			res.IdleRelayCPU = append(res.IdleRelayCPU, r.idle[i-res.Relays].cpu.Seconds())
		}
	}
	if r.cluster != nil {
		res.NATSCPUSeconds = (r.cluster.cpu() - s.nats0).Seconds()
	}
	res.LoadCPUSeconds = (selfCPU() - s.self0).Seconds()
	res.DeliveriesPerSec = float64(res.Deliveries) / elapsed.Seconds()
	res.RelayCPUSeconds = r.usage.cpu.Seconds()
	if res.Deliveries > 0 {
		res.RelayCPUPerDel = r.usage.cpu.Seconds() * 1e6 / float64(res.Deliveries)
	}
	r.profiles.wait() // they cover the window less a second: ended or about to
}

// drain waits for the last turns to end, then for every subscriber to
// catch up to them, and notes the relays' peak RSS.
func (r *loadRun) drain(ctx context.Context) {
	// One deadline for all of them (a channel of time.After fires once:
	// with two conversations that never ended the second wait was for
	// good), and a generous one: a last turn may wait out a lease and a
	// takeover, and a prompt refused meanwhile is sent again (TestRunNATS's
	// last turn after the SIGKILLed relay's takeover took longer than two
	// turn times plus the drain).
	turnTime := time.Duration(r.cfg.Deltas) * r.cfg.Interval
	waitLastTurns(ctx, r.convs, 2*turnTime+r.cfg.Drain+lastTurnGrace)
	drainUntil := time.Now().Add(r.cfg.Drain)
	for {
		behind := 0
		for _, c := range r.clients {
			if f := c.conv.final.Load(); f < 0 || c.lastSeq.Load() < f {
				behind++
			}
		}
		if behind == 0 || time.Now().After(drainUntil) {
			if behind > 0 {
				r.log.Error("load: subscribers still behind at the end of the drain", "behind", behind)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range r.relays {
		if p != nil {
			r.usage.peak(p)
		}
	}
	r.res.RelayPeakRSSKiB = r.usage.peakKiB
}

// verify checks that the stored history holds every event of every
// conversation (with -nats, read from every relay that survived: each must
// serve the same history).
func (r *loadRun) verify(ctx context.Context) {
	if r.cfg.Memory || !r.cfg.VerifyHistory {
		return
	}
	res := r.res
	for _, url := range r.state.liveURLs() {
		n, problems := verifyHistory(ctx, url, r.token, r.convs, r.cfg.DialConc)
		res.HistoryChecked += n
		res.Replayed++
		for _, p := range problems {
			res.HistoryProblems = append(res.HistoryProblems, url+": "+p)
		}
	}
	for _, p := range res.HistoryProblems[:min(len(res.HistoryProblems), 5)] {
		r.log.Error("load: history", "problem", p)
	}
}

// stopRelays stops every relay still running with SIGTERM and notes how
// each exited and the warnings of their logs.
func (r *loadRun) stopRelays() {
	var exits []string
	warnings := r.res.KillWarnings
	for i, p := range r.relays {
		if p == nil {
			continue
		}
		name := ""
		if len(r.relays) > 1 {
			name = fmt.Sprintf("relay %d: ", i+1)
		}
		if err := p.Stop(30 * time.Second); err != nil {
			exits = append(exits, name+err.Error())
		} else {
			exits = append(exits, name+"clean (exit 0 after SIGTERM)")
		}
		warnings = append(warnings, p.Warnings()...)
		r.relays[i] = nil
	}
	r.res.RelayExit = strings.Join(exits, "; ")
	r.res.RelayWarnings = len(warnings)
	r.res.WarningSamples = warnings[:min(len(warnings), 5)]
}

// account adds up what the conversations and clients saw.
func (r *loadRun) account() {
	res, state := r.res, r.state
	var e2e, takeovers []time.Duration
	for _, conv := range r.convs {
		res.Turns += conv.turns.Load()
		if conv.final.Load() < 0 {
			res.Unfinished++
		}
		if at := conv.lostAt.Load(); at != 0 && !r.killedAt.IsZero() {
			takeovers = append(takeovers, time.Unix(0, at).Sub(r.killedAt))
			if conv.turnsAfter.Load() == 0 {
				res.NoTurnAfter = append(res.NoTurnAfter, conv.id)
			}
		}
	}
	for _, c := range r.clients {
		final := c.conv.final.Load()
		if final < 0 {
			final = c.seqs.last
		}
		c.seqs.finish(final)
		res.Lost += c.seqs.lost
		res.Repeats += c.seqs.repeats
		res.Reconnects += c.reconnects
		res.AllDeliveries += c.seqs.received
		e2e = append(e2e, c.e2e...)
		for _, e := range c.errFrames {
			if len(res.ErrorSamples) < 5 {
				res.ErrorSamples = append(res.ErrorSamples, e)
			}
		}
	}
	res.Errors = state.errors.Load()
	res.LostTurns, res.AbortedTurns = state.lostTurns.Load(), state.aborted.Load()
	res.StoreFailed, res.Refused = state.storeFailed.Load(), state.refused.Load()
	if rec, first := state.recoveredAt.Load(), state.firstAfter.Load(); rec != 0 {
		if first == 0 {
			res.ResumeSeconds = time.Since(time.Unix(0, rec)).Seconds()
		} else {
			res.ResumeSeconds = max(0, time.Duration(first-rec).Seconds())
		}
	}
	res.RestartedTurns = state.restarted.Load()
	res.Resends = state.resends.Load()
	res.EndToEnd = latencyOf(e2e)
	res.Spread = latencyOf(fanOutSpread(r.clients, r.convs))
	res.Takeover = latencyOf(takeovers)
}

func sumDelivered(clients []*client) int64 {
	var n int64
	for _, c := range clients {
		n += c.delivered.Load()
	}
	return n
}

// fanOutSpread is, for every delivery, how long after the first subscriber
// of its conversation got the same event this subscriber got it.
func fanOutSpread(clients []*client, convs []*conversation) []time.Duration {
	first := make(map[*conversation][]int64, len(convs)) // by absolute seq
	for _, c := range clients {
		f := first[c.conv]
		for i, at := range c.recvAt {
			if at == 0 {
				continue
			}
			seq := int(c.seqs.base) + 1 + i
			for len(f) <= seq {
				f = append(f, 0)
			}
			if f[seq] == 0 || at < f[seq] {
				f[seq] = at
			}
		}
		first[c.conv] = f
	}
	var out []time.Duration
	for _, c := range clients {
		f := first[c.conv]
		for i, at := range c.recvAt {
			if at != 0 {
				out = append(out, time.Duration(at-f[int(c.seqs.base)+1+i]))
			}
		}
	}
	return out
}
