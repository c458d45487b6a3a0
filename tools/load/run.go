package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// result is what a run measured.
type result struct {
	Conns    int    `json:"conns"`
	Convs    int    `json:"convs"`
	Duration string `json:"duration"`
	History  string `json:"history"` // "sqlite", "memory" or "nats"
	Relays   int    `json:"relays"`
	// IdleRelays (with -nats) are relays no client connects to, after
	// the Relays that clients use.
	IdleRelays int    `json:"idleRelays,omitempty"`
	Deltas     int    `json:"deltasPerTurn"`
	Interval   string `json:"deltaInterval"`
	Payload    int    `json:"deltaBytes"`

	ConnectSeconds   float64  `json:"connectSeconds"`
	Turns            int64    `json:"turns"`
	Deliveries       int64    `json:"deliveries"` // during the run
	DeliveriesPerSec float64  `json:"deliveriesPerSecond"`
	AllDeliveries    int64    `json:"allDeliveries"` // including the last turns after it
	Lost             int64    `json:"lostDeliveries"`
	Repeats          int64    `json:"repeatedDeliveries"`
	Reconnects       int      `json:"reconnects"`
	Unfinished       int      `json:"unfinishedConversations"`
	Errors           int64    `json:"unexpectedFrames"`
	ErrorSamples     []string `json:"errorSamples,omitempty"`
	RunSeconds       float64  `json:"runSeconds"`

	EndToEnd latency `json:"sendToDeliveryLatency"`
	Spread   latency `json:"fanOutSpread"`

	RelayPeakRSSKiB int64    `json:"relayPeakRSSKiB"`
	RelayIdleRSSKiB int64    `json:"relayRSSConnectedIdleKiB"`
	RelayCPUSeconds float64  `json:"relayCPUSeconds"`
	RelayCPUPerDel  float64  `json:"relayCPUMicrosPerDelivery"`
	LoadCPUSeconds  float64  `json:"loadToolCPUSeconds"`
	RelayWarnings   int      `json:"relayWarnings"`
	WarningSamples  []string `json:"warningSamples,omitempty"`
	RelayExit       string   `json:"relayExit"`
	Kills           int      `json:"kills"`
	RestartSeconds  float64  `json:"restartSeconds,omitempty"`
	RestartedTurns  int64    `json:"turnsClosedByRestart"`
	// With -nats: the relay killed is not restarted; its clients resume at
	// the others, and the turns it ran are closed by a takeover.
	KilledClients  int      `json:"killedRelayClients,omitempty"`
	Takeover       latency  `json:"takeoverMs,omitempty"` // SIGKILL → the first client that got the interrupted turn's "relay lost" idle, per conversation
	NoTurnAfter    []string `json:"conversationsWithoutTurnAfterTakeover,omitempty"`
	Resends        int64    `json:"promptsSentAgain,omitempty"`
	NATSCPUSeconds float64  `json:"natsServerCPUSeconds,omitempty"`
	// IdleRelayCPU is each idle relay's CPU during the run: what it costs a
	// relay to follow the conversations the others stream.
	IdleRelayCPU []float64 `json:"idleRelayCPUSeconds,omitempty"`
	KillWarnings []string  `json:"-"`
	// With -fault: what was injected, and what the clients saw of it.
	Fault           string   `json:"fault,omitempty"`
	Seed            uint64   `json:"seed,omitempty"`
	FaultEvents     []string `json:"faultEvents,omitempty"`
	LostTurns       int64    `json:"turnsClosedRelayLostWithoutALostRelay,omitempty"`
	AbortedTurns    int64    `json:"turnsAborted,omitempty"`
	StoreFailed     int64    `json:"turnsClosedStoreUnreachable,omitempty"`
	Refused         int64    `json:"promptsRefusedSentAgain,omitempty"`
	ResumeSeconds   float64  `json:"firstDeliveryAfterRecoverySeconds,omitempty"`
	Replayed        int      `json:"relaysReplayedFrom,omitempty"`
	HistoryChecked  int64    `json:"historyEventsChecked"`
	HistoryProblems []string `json:"historyProblems,omitempty"`
	CPUs            int      `json:"cpus"`
	LoadAvgBefore   string   `json:"loadAverageBefore"`
	LoadAvgAfter    string   `json:"loadAverageAfter"`
	CPUPressure     string   `json:"cpuPressureAfter"`
	Dir             string   `json:"dir,omitempty"`
}

type latency struct {
	Samples int     `json:"samples"`
	P50     float64 `json:"p50ms"`
	P90     float64 `json:"p90ms"`
	P99     float64 `json:"p99ms"`
	Max     float64 `json:"maxms"`
}

func latencyOf(ds []time.Duration) latency {
	if len(ds) == 0 {
		return latency{}
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		i := int(q * float64(len(ds)-1))
		return float64(ds[i]) / float64(time.Millisecond)
	}
	return latency{Samples: len(ds), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: at(1)}
}

// resumeTarget is how soon streaming must go on once a fault is over.
const resumeTarget = 60 * time.Second

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

// takeoverTarget is issue #15's: the interrupted turn closed at another
// relay's client within 20 s of its owner's SIGKILL.
const takeoverTarget = 20 * time.Second

func (r *result) failed() bool { return r.failure() != "" }

func (r *result) failure() string {
	var why []string
	if r.Lost > 0 {
		why = append(why, fmt.Sprintf("%d deliveries lost", r.Lost))
	}
	if r.Repeats > 0 {
		why = append(why, fmt.Sprintf("%d deliveries repeated", r.Repeats))
	}
	if r.Unfinished > 0 {
		why = append(why, fmt.Sprintf("%d conversations did not finish their last turn", r.Unfinished))
	}
	if r.Errors > 0 {
		why = append(why, fmt.Sprintf("%d unexpected frames or failed sends", r.Errors))
	}
	if len(r.HistoryProblems) > 0 {
		why = append(why, fmt.Sprintf("%d problems in the stored history", len(r.HistoryProblems)))
	}
	if r.Deliveries == 0 {
		why = append(why, "nothing was delivered")
	}
	if r.LostTurns > 0 {
		why = append(why, fmt.Sprintf("%d turns closed \"relay lost\" although no relay was lost", r.LostTurns))
	}
	if r.AbortedTurns > 0 {
		why = append(why, fmt.Sprintf("%d turns aborted", r.AbortedTurns))
	}
	if r.Fault != "" && r.Fault != faultNone && r.Fault != faultRelayKill && r.ResumeSeconds > resumeTarget.Seconds() {
		why = append(why, fmt.Sprintf("streaming resumed %.0f s after the cluster was whole again (target %v)", r.ResumeSeconds, resumeTarget))
	}
	if r.History == "nats" && r.Kills > 0 {
		if r.RestartedTurns == 0 || r.Takeover.Samples == 0 {
			why = append(why, "the killed relay's turns were never closed by a takeover")
		}
		if len(r.NoTurnAfter) > 0 {
			why = append(why, fmt.Sprintf("%d conversations ran no turn after the takeover", len(r.NoTurnAfter)))
		}
	}
	return strings.Join(why, "; ")
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
	res := &result{
		Conns: cfg.Conns, Convs: cfg.Convs, Duration: cfg.Duration.String(), History: "sqlite", Relays: 1,
		Deltas: cfg.Deltas, Interval: cfg.Interval.String(), Payload: cfg.Payload,
	}
	switch {
	case cfg.Memory:
		res.History = "memory"
	case cfg.NATS:
		res.History, res.Relays, res.IdleRelays = "nats", cfg.Relays, cfg.IdleRelays
	}
	keep := cfg.Keep
	defer func() {
		if keep {
			res.Dir = dir
			return
		}
		os.RemoveAll(dir)
	}()

	token := newToken()
	state := &runState{token: token, nats: cfg.NATS, pingEvery: 30 * time.Second}
	var plan faultPlan
	if cfg.NATS && cfg.Fault != "" && cfg.Fault != faultNone {
		plan = planFault(cfg)
		res.Fault, res.Seed = plan.String(), plan.Seed
		state.fault = plan.Fault
		// Clients leave a silent relay after 3 pings, as the app's do.
		state.pingEvery = 2 * time.Second
		log.Info("load: fault planned", "fault", plan.String(), "seed", plan.Seed)
	}
	var cluster *natsCluster
	storeArgs := func(int) []string { return sqliteArgs(cfg, dir) }
	logName := func(int) string { return "relay.log" }
	if cfg.NATS {
		if cluster, err = startNATSCluster(); err != nil {
			return nil, err
		}
		defer cluster.stop() // after the relays (defers run last first)
		log.Info("load: 3-node nats-server cluster started", "urls", cluster.c.URLs())
		cfg.natsPassword = cluster.c.Password
		storeArgs = func(i int) []string { return cluster.relayArgs(cfg, dir, i) }
		logName = func(i int) string { return fmt.Sprintf("relay%d.log", i+1) }
	}
	relays := make([]*relayProc, res.Relays+res.IdleRelays)
	// Whichever relays run are killed on every return.
	defer func() {
		for _, p := range relays {
			if p != nil {
				p.kill()
			}
		}
	}()
	for i := range relays {
		p, err := startRelay(ctx, cfg, dir, token, logName(i), storeArgs(i))
		if err != nil {
			keep = true
			return nil, err
		}
		relays[i] = p
		if i < res.Relays {
			state.setURL(i, p.url) // an idle relay's is nobody's
		}
		log.Info("load: relay started", "idle", i >= res.Relays, "url", p.url, "pid", p.cmd.Process.Pid, "history", res.History,
			"conns", cfg.Conns, "convs", cfg.Convs, "duration", cfg.Duration)
	}
	logPaths := func() string {
		var ps []string
		for _, p := range relays {
			if p != nil {
				ps = append(ps, p.logPath)
			}
		}
		return strings.Join(ps, ", ")
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	convs := make([]*conversation, cfg.Convs)
	for i := range convs {
		convs[i] = &conversation{id: uuid.NewString(), index: i, finalCh: make(chan struct{})}
		convs[i].final.Store(-1)
	}
	clients := make([]*client, cfg.Conns)
	for i := range clients {
		conv := convs[i%cfg.Convs]
		// Connection i goes to relay i mod relays: a conversation's
		// sender (its first connection) and its subscribers are on
		// different relays.
		c := &client{id: i, home: i % res.Relays, conv: conv, sender: i < cfg.Convs, log: log, run: state, ready: make(chan error, 1)}
		if c.sender {
			conv.sender = c
		}
		clients[i] = c
	}

	// Connect and subscribe everyone.
	start := time.Now()
	var wg sync.WaitGroup
	dialSem := make(chan struct{}, cfg.DialConc)
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.loop(runCtx, dialSem)
		}()
	}
	var setupErr error
	for _, c := range clients {
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
	res.ConnectSeconds = time.Since(start).Seconds()
	if setupErr != nil {
		cancel()
		wg.Wait()
		keep = true
		return nil, fmt.Errorf("connecting: %w (relay logs: %s)", setupErr, logPaths())
	}
	log.Info("load: connected and subscribed", "conns", cfg.Conns, "seconds", fmt.Sprintf("%.1f", res.ConnectSeconds))
	for _, p := range relays {
		kib, _ := procStatus(p.cmd.Process.Pid, "VmRSS")
		res.RelayIdleRSSKiB = max(res.RelayIdleRSSKiB, kib)
	}

	res.CPUs, res.LoadAvgBefore = runtime.NumCPU(), loadAverage()
	// Stream: every sender starts a turn, and another when one ends.
	usage := relayUsage{start: map[int]time.Duration{}}
	idle := make([]relayUsage, res.IdleRelays)
	for i, p := range relays {
		if i < res.Relays {
			usage.begin(p)
		} else {
			idle[i-res.Relays] = relayUsage{start: map[int]time.Duration{}}
			idle[i-res.Relays].begin(p)
		}
	}
	var nats0 time.Duration
	if cluster != nil {
		nats0 = cluster.cpu()
	}
	self0 := selfCPU()
	t0 := time.Now()
	for _, conv := range convs {
		if err := conv.sender.sendPrompt(runCtx); err != nil {
			state.errors.Add(1)
			log.Error("load: first prompt", "err", err)
		}
	}
	progress := time.NewTicker(10 * time.Second)
	deadline := time.NewTimer(cfg.Duration)
	var killAt <-chan time.Time
	if cfg.KillAt > 0 {
		killAt = time.After(cfg.KillAt)
	}
	var killedAt time.Time
	var (
		faultDone    chan error
		fault        *faultRun
		deadlineSeen bool
	)
	faultCtx, faultCancel := context.WithCancel(runCtx)
	defer func() {
		faultCancel()
		if faultDone != nil {
			<-faultDone
		}
	}()
wait:
	for {
		select {
		case <-deadline.C:
			if faultDone != nil {
				deadlineSeen = true // the run ends once the fault is over
				continue
			}
			break wait
		case err := <-faultDone:
			faultDone = nil
			res.FaultEvents = fault.report()
			res.KillWarnings = append(res.KillWarnings, fault.warnings...)
			if err != nil {
				log.Error("load: the fault could not be injected", "err", err)
				state.errors.Add(1)
			}
			// Streaming goes on for a while after the fault, so that
			// the run shows it does.
			if deadlineSeen {
				deadline.Reset(20 * time.Second)
			}
		case <-ctx.Done():
			log.Warn("load: interrupted; finishing early")
			break wait
		case <-ctx.Done():
			log.Warn("load: interrupted; finishing early")
			break wait
		case <-progress.C:
			log.Info("load: running", "elapsed", time.Since(t0).Round(time.Second), "deliveries", sumDelivered(clients))
		case <-killAt:
			if cfg.NATS && plan.Fault != "" && plan.Fault != faultRelayKill {
				fault = &faultRun{plan: plan, cfg: cfg, dir: dir, log: log, cluster: cluster, relays: &fleet{relays: relays},
					state: state, usage: &usage, start: func(i int, logName string) (*relayProc, error) {
						return startRelay(ctx, cfg, dir, token, logName, storeArgs(i))
					}}
				faultDone = make(chan error, 1)
				go func() { faultDone <- fault.inject(faultCtx) }()
				continue
			}
			victim := relays[0]
			usage.end(victim)
			state.killed.Store(true)
			res.Kills++
			if cfg.NATS {
				// SIGKILL one of the relays; it stays dead. Its clients
				// reconnect to the others (urlFor), which take its
				// conversations over once its lease lapses.
				state.kill(0)
				killedAt = time.Now()
				victim.kill()
				relays[0] = nil
				for _, c := range clients {
					if c.home == 0 {
						res.KilledClients++
					}
				}
				res.KillWarnings = append(res.KillWarnings, victim.warningLines()...)
				log.Warn("load: relay 1 killed with SIGKILL; its clients move to the other relays", "clients", res.KilledClients)
				continue
			}
			// SIGKILL in the middle of the streams, restart on the same
			// data dir; the clients resume with sinceSeq.
			victim.kill()
			killedAt = time.Now()
			log.Warn("load: relay killed with SIGKILL; restarting it on the same data dir")
			res.KillWarnings = append(res.KillWarnings, victim.warningLines()...)
			relays[0] = nil
			p, err := startRelay(ctx, cfg, dir, token, "relay-after-kill.log", storeArgs(0))
			if err != nil {
				keep = true
				cancel()
				wg.Wait()
				state.timers.Wait()
				return nil, fmt.Errorf("restarting the relay after SIGKILL: %w", err)
			}
			relays[0] = p
			res.RestartSeconds = time.Since(killedAt).Seconds()
			state.setURL(0, p.url)
			usage.begin(p)
			log.Info("load: relay restarted", "url", p.url, "seconds", fmt.Sprintf("%.2f", res.RestartSeconds))
		}
	}
	progress.Stop()
	state.stopping.Store(true)
	elapsed := time.Since(t0)
	res.RunSeconds = elapsed.Seconds()
	res.LoadAvgAfter = loadAverage()
	res.CPUPressure = cpuPressure()
	res.Deliveries = sumDelivered(clients)
	for i, p := range relays {
		switch {
		case p == nil:
		case i < res.Relays:
			usage.end(p)
		default:
			idle[i-res.Relays].end(p)
			res.IdleRelayCPU = append(res.IdleRelayCPU, idle[i-res.Relays].cpu.Seconds())
		}
	}
	if cluster != nil {
		res.NATSCPUSeconds = (cluster.cpu() - nats0).Seconds()
	}
	res.LoadCPUSeconds = (selfCPU() - self0).Seconds()
	res.DeliveriesPerSec = float64(res.Deliveries) / elapsed.Seconds()
	res.RelayCPUSeconds = usage.cpu.Seconds()
	if res.Deliveries > 0 {
		res.RelayCPUPerDel = usage.cpu.Seconds() * 1e6 / float64(res.Deliveries)
	}

	// The last turns end; then every subscriber must catch up to them.
	// One deadline for all of them (a channel of time.After fires once:
	// with two conversations that never ended the second wait was for
	// good), and a generous one: a last turn may wait out a lease and a
	// takeover, and a prompt refused meanwhile is sent again (TestRunNATS's
	// last turn after the SIGKILLed relay's takeover took longer than two
	// turn times plus the drain).
	turnTime := time.Duration(cfg.Deltas) * cfg.Interval
	waitLastTurns(ctx, convs, 2*turnTime+cfg.Drain+lastTurnGrace)
	drainUntil := time.Now().Add(cfg.Drain)
	for {
		behind := 0
		for _, c := range clients {
			if f := c.conv.final.Load(); f < 0 || c.lastSeq.Load() < f {
				behind++
			}
		}
		if behind == 0 || time.Now().After(drainUntil) {
			if behind > 0 {
				log.Error("load: subscribers still behind at the end of the drain", "behind", behind)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range relays {
		if p != nil {
			usage.peak(p)
		}
	}
	res.RelayPeakRSSKiB = usage.peakKiB
	cancel()
	wg.Wait()
	state.timers.Wait()

	// The stored history holds every event of every conversation (with
	// -nats, read from a relay that survived).
	if !cfg.Memory && cfg.VerifyHistory {
		// From every relay alive: each must serve the same history.
		for _, url := range state.liveURLs() {
			n, problems := verifyHistory(ctx, url, token, convs, cfg.DialConc)
			res.HistoryChecked += n
			res.Replayed++
			for _, p := range problems {
				res.HistoryProblems = append(res.HistoryProblems, url+": "+p)
			}
		}
		for _, p := range res.HistoryProblems[:min(len(res.HistoryProblems), 5)] {
			log.Error("load: history", "problem", p)
		}
	}

	var exits []string
	warnings := res.KillWarnings
	for i, p := range relays {
		if p == nil {
			continue
		}
		name := ""
		if len(relays) > 1 {
			name = fmt.Sprintf("relay %d: ", i+1)
		}
		if err := p.stop(30 * time.Second); err != nil {
			exits = append(exits, name+err.Error())
		} else {
			exits = append(exits, name+"clean (exit 0 after SIGTERM)")
		}
		warnings = append(warnings, p.warningLines()...)
		relays[i] = nil
	}
	res.RelayExit = strings.Join(exits, "; ")
	res.RelayWarnings = len(warnings)
	res.WarningSamples = warnings[:min(len(warnings), 5)]

	// Accounting.
	var e2e, takeovers []time.Duration
	for _, conv := range convs {
		res.Turns += conv.turns.Load()
		if conv.final.Load() < 0 {
			res.Unfinished++
		}
		if at := conv.lostAt.Load(); at != 0 && !killedAt.IsZero() {
			takeovers = append(takeovers, time.Unix(0, at).Sub(killedAt))
			if conv.turnsAfter.Load() == 0 {
				res.NoTurnAfter = append(res.NoTurnAfter, conv.id)
			}
		}
	}
	for _, c := range clients {
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
	res.Spread = latencyOf(fanOutSpread(clients, convs))
	res.Takeover = latencyOf(takeovers)
	if res.failed() {
		keep = true
	}
	return res, nil
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

func (r *result) print(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	if r.History == "nats" {
		p("pilotdesk load: %d connections over %d relays, %d conversations (%d subscribers each), %s, history in a 3-node nats-server cluster (R3)",
			r.Conns, r.Relays, r.Convs, r.Conns/r.Convs, r.Duration)
		if r.IdleRelays > 0 {
			p("  and %d more relay(s) on the cluster that no client connects to", r.IdleRelays)
		}
	} else {
		p("pilotdesk load: %d connections, %d conversations (%d subscribers each), %s, history in %s",
			r.Conns, r.Convs, r.Conns/r.Convs, r.Duration, r.History)
	}
	p("  script: %d deltas of %d bytes per turn, %s apart; a new prompt as soon as a turn ends", r.Deltas, r.Payload, r.Interval)
	p("  connected and subscribed in       %.1f s", r.ConnectSeconds)
	p("  turns completed                   %d", r.Turns)
	p("  deliveries during the run         %d (%.0f per second)", r.Deliveries, r.DeliveriesPerSec)
	p("  deliveries in all                 %d (with the last turns after the run)", r.AllDeliveries)
	p("  lost deliveries                   %d", r.Lost)
	p("  repeated deliveries               %d", r.Repeats)
	p("  reconnects (resumed with sinceSeq) %d", r.Reconnects)
	if r.Kills > 0 && r.History == "nats" {
		p("  relay 1 killed (SIGKILL) mid-run   its %d clients resumed at the other relays; %d turns it ran closed by a takeover (idle error \"relay lost\"); %d prompts sent again (error limit while its lease held)",
			r.KilledClients, r.RestartedTurns, r.Resends)
		verdict := "met"
		if r.Takeover.Samples == 0 || r.Takeover.Max > takeoverTarget.Seconds()*1000 {
			verdict = "MISSED"
		}
		p("  takeover: SIGKILL -> turn closed   p50 %.1f s, max %.1f s over %d conversations (target <= %.0f s: %s)",
			r.Takeover.P50/1000, r.Takeover.Max/1000, r.Takeover.Samples, takeoverTarget.Seconds(), verdict)
		if len(r.NoTurnAfter) > 0 {
			p("  conversations with no turn after the takeover: %d (%s…)", len(r.NoTurnAfter), r.NoTurnAfter[0])
		}
	} else if r.Kills > 0 {
		p("  relay killed (SIGKILL) mid-run     %d time(s); restarted on the same data dir in %.2f s; %d turns closed by it (idle error \"relay restarted\")",
			r.Kills, r.RestartSeconds, r.RestartedTurns)
	}
	if r.Fault != "" {
		p("  fault                             %s, seed %d", r.Fault, r.Seed)
		for _, e := range r.FaultEvents {
			p("    %s", e)
		}
		p("  turns ended by the fault          %d closed \"history store unreachable\", %d aborted, %d closed \"relay lost\" with no relay lost; %d prompts refused and sent again",
			r.StoreFailed, r.AbortedTurns, r.LostTurns, r.Refused)
		p("  first delivery after recovery     %.1f s", r.ResumeSeconds)
	}
	if r.HistoryChecked > 0 || len(r.HistoryProblems) > 0 {
		p("  stored history replayed from 0    %d events from %d relay(s), %d problems", r.HistoryChecked, max(r.Replayed, 1), len(r.HistoryProblems))
		for _, s := range r.HistoryProblems[:min(len(r.HistoryProblems), 5)] {
			p("    %s", s)
		}
	}
	p("  latency send -> subscriber        p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms (%d samples)",
		r.EndToEnd.P50, r.EndToEnd.P90, r.EndToEnd.P99, r.EndToEnd.Max, r.EndToEnd.Samples)
	p("  fan-out spread                    p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms (%d deliveries)",
		r.Spread.P50, r.Spread.P90, r.Spread.P99, r.Spread.Max, r.Spread.Samples)
	if r.Relays > 1 {
		p("  relay peak RSS (VmHWM), largest   %.1f MiB (%.1f MiB connected, before streaming)",
			float64(r.RelayPeakRSSKiB)/1024, float64(r.RelayIdleRSSKiB)/1024)
		p("  relays' CPU during the run        %.1f s (%.2f cores), %.2f µs per delivery", r.RelayCPUSeconds,
			r.RelayCPUSeconds/r.RunSeconds, r.RelayCPUPerDel)
		p("  nats-servers' CPU during the run  %.1f s (%.2f cores)", r.NATSCPUSeconds, r.NATSCPUSeconds/r.RunSeconds)
		for i, cpu := range r.IdleRelayCPU {
			p("  idle relay %d's CPU (no client)    %.1f s (%.3f cores)", i+1, cpu, cpu/r.RunSeconds)
		}
	} else {
		p("  relay peak RSS (VmHWM)            %.1f MiB (%.1f MiB connected, before streaming)",
			float64(r.RelayPeakRSSKiB)/1024, float64(r.RelayIdleRSSKiB)/1024)
		p("  relay CPU during the run          %.1f s (%.2f cores), %.2f µs per delivery", r.RelayCPUSeconds,
			r.RelayCPUSeconds/r.RunSeconds, r.RelayCPUPerDel)
	}
	p("  load tool CPU during the run      %.1f s", r.LoadCPUSeconds)
	p("  machine                           %d CPUs, load average (1/5/15 min) %s before, %s after", r.CPUs, r.LoadAvgBefore, r.LoadAvgAfter)
	p("                                    CPU pressure (share of time some task waited for a CPU, 10 s/60 s) %s", r.CPUPressure)
	p("  relay warnings in its log         %d", r.RelayWarnings)
	for _, s := range r.WarningSamples {
		p("    %s", s)
	}
	p("  relay exit                        %s", r.RelayExit)
	if r.Errors > 0 {
		p("  unexpected frames or sends        %d", r.Errors)
		for _, s := range r.ErrorSamples {
			p("    %s", s)
		}
	}
	if r.Dir != "" {
		p("  kept: %s (the relays' logs, script.json, their data dirs)", r.Dir)
	}
	verdict := "PASS"
	if r.failed() {
		verdict = "FAIL: " + r.failure()
	}
	if r.Fault != "" {
		p("VERDICT %s seed=%d: %s", strings.Fields(r.Fault)[0], r.Seed, verdict)
	}
	switch {
	case r.failed():
		p("FAIL: %s", r.failure())
	case r.History == "nats":
		p("PASS: every subscriber, on whichever relay, received every event from its subscription on, once and in order, and the history replayed from a surviving relay holds them all")
	default:
		p("PASS: every subscriber received every event from its subscription on, once and in order")
	}
}

func (r *result) printJSON(w io.Writer) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(r)
}

// loadAverage is the machine's load average over 1, 5 and 15 minutes: the
// figures depend on what else the machine runs.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], "/")
}

// relayUsage adds up the CPU of the relay processes of a run (more than one
// when the relay is killed and restarted, or with -nats) and keeps the
// highest peak RSS of one.
type relayUsage struct {
	cpu     time.Duration
	start   map[int]time.Duration // by pid: CPU time at begin
	peakKiB int64
}

func (u *relayUsage) begin(p *relayProc) {
	u.start[p.cmd.Process.Pid], _ = procCPU(p.cmd.Process.Pid)
}

// end adds the CPU used since begin and notes the peak RSS.
func (u *relayUsage) end(p *relayProc) {
	pid := p.cmd.Process.Pid
	if now, err := procCPU(pid); err == nil {
		u.cpu += now - u.start[pid]
		u.start[pid] = now
	}
	u.peak(p)
}

func (u *relayUsage) peak(p *relayProc) {
	if kib, err := procStatus(p.cmd.Process.Pid, "VmHWM"); err == nil {
		u.peakKiB = max(u.peakKiB, kib)
	}
}

// cpuPressure is the kernel's CPU pressure (PSI): the share of the last 10
// and 60 s in which some runnable task waited for a CPU. Near 100 % means
// the machine was saturated and latencies include waiting for a core.
func cpuPressure() string {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return "unknown"
	}
	var avg10, avg60 string
	for _, f := range strings.Fields(strings.SplitN(string(b), "\n", 2)[0]) {
		if v, ok := strings.CutPrefix(f, "avg10="); ok {
			avg10 = v
		}
		if v, ok := strings.CutPrefix(f, "avg60="); ok {
			avg60 = v
		}
	}
	if avg10 == "" {
		return "unknown"
	}
	return avg10 + "%/" + avg60 + "%"
}
