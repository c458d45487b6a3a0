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
	History  string `json:"history"` // "sqlite" or "memory"
	Deltas   int    `json:"deltasPerTurn"`
	Interval string `json:"deltaInterval"`
	Payload  int    `json:"deltaBytes"`

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
	KillWarnings    []string `json:"-"`
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
	return strings.Join(why, "; ")
}

// run starts the relay, loads it and measures.
func run(ctx context.Context, cfg config, log *slog.Logger) (*result, error) {
	if err := raiseFileLimit(cfg.Conns); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pilotdesk-load-")
	if err != nil {
		return nil, err
	}
	res := &result{
		Conns: cfg.Conns, Convs: cfg.Convs, Duration: cfg.Duration.String(), History: "sqlite",
		Deltas: cfg.Deltas, Interval: cfg.Interval.String(), Payload: cfg.Payload,
	}
	if cfg.Memory {
		res.History = "memory"
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
	relay, err := startRelay(ctx, cfg, dir, token, "relay.log")
	if err != nil {
		keep = true
		return nil, err
	}
	log.Info("load: relay started", "url", relay.url, "pid", relay.cmd.Process.Pid, "history", res.History,
		"conns", cfg.Conns, "convs", cfg.Convs, "duration", cfg.Duration)
	// relayStop ends whichever relay runs, on every return.
	defer func() {
		if relay != nil {
			relay.kill()
		}
	}()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	state := &runState{token: token}
	state.url.Store(&relay.url)
	convs := make([]*conversation, cfg.Convs)
	for i := range convs {
		convs[i] = &conversation{id: uuid.NewString(), index: i, finalCh: make(chan struct{})}
		convs[i].final.Store(-1)
	}
	clients := make([]*client, cfg.Conns)
	for i := range clients {
		conv := convs[i%cfg.Convs]
		c := &client{id: i, conv: conv, sender: i < cfg.Convs, log: log, run: state, ready: make(chan error, 1)}
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
		return nil, fmt.Errorf("connecting: %w (relay log: %s)", setupErr, relay.logPath)
	}
	log.Info("load: connected and subscribed", "conns", cfg.Conns, "seconds", fmt.Sprintf("%.1f", res.ConnectSeconds))
	res.RelayIdleRSSKiB, _ = procStatus(relay.cmd.Process.Pid, "VmRSS")

	res.CPUs, res.LoadAvgBefore = runtime.NumCPU(), loadAverage()
	// Stream: every sender starts a turn, and another when one ends.
	var usage relayUsage
	usage.begin(relay)
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
wait:
	for {
		select {
		case <-deadline.C:
			break wait
		case <-ctx.Done():
			log.Warn("load: interrupted; finishing early")
			break wait
		case <-progress.C:
			log.Info("load: running", "elapsed", time.Since(t0).Round(time.Second), "deliveries", sumDelivered(clients))
		case <-killAt:
			// SIGKILL in the middle of the streams, restart on the same
			// data dir; the clients resume with sinceSeq.
			usage.end(relay)
			state.killed.Store(true)
			relay.kill()
			killed := time.Now()
			log.Warn("load: relay killed with SIGKILL; restarting it on the same data dir")
			res.Kills++
			res.KillWarnings = append(res.KillWarnings, relay.warningLines()...)
			relay, err = startRelay(ctx, cfg, dir, token, "relay-after-kill.log")
			if err != nil {
				keep = true
				cancel()
				wg.Wait()
				return nil, fmt.Errorf("restarting the relay after SIGKILL: %w", err)
			}
			res.RestartSeconds = time.Since(killed).Seconds()
			state.url.Store(&relay.url)
			usage.begin(relay)
			log.Info("load: relay restarted", "url", relay.url, "seconds", fmt.Sprintf("%.2f", res.RestartSeconds))
		}
	}
	progress.Stop()
	state.stopping.Store(true)
	elapsed := time.Since(t0)
	res.RunSeconds = elapsed.Seconds()
	res.LoadAvgAfter = loadAverage()
	res.CPUPressure = cpuPressure()
	res.Deliveries = sumDelivered(clients)
	usage.end(relay)
	res.LoadCPUSeconds = (selfCPU() - self0).Seconds()
	res.DeliveriesPerSec = float64(res.Deliveries) / elapsed.Seconds()
	res.RelayCPUSeconds = usage.cpu.Seconds()
	if res.Deliveries > 0 {
		res.RelayCPUPerDel = usage.cpu.Seconds() * 1e6 / float64(res.Deliveries)
	}

	// The last turns end; then every subscriber must catch up to them.
	turnTime := time.Duration(cfg.Deltas) * cfg.Interval
	finalWait := time.After(2*turnTime + cfg.Drain)
	for _, conv := range convs {
		select {
		case <-conv.finalCh:
		case <-finalWait:
		}
	}
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
	usage.peak(relay)
	res.RelayPeakRSSKiB = usage.peakKiB
	cancel()
	wg.Wait()

	// The stored history holds every event of every conversation.
	if !cfg.Memory && cfg.VerifyHistory {
		res.HistoryChecked, res.HistoryProblems = verifyHistory(ctx, *state.url.Load(), token, convs, cfg.DialConc)
		for _, p := range res.HistoryProblems[:min(len(res.HistoryProblems), 5)] {
			log.Error("load: history", "problem", p)
		}
	}

	if err := relay.stop(); err != nil {
		res.RelayExit = err.Error()
	} else {
		res.RelayExit = "clean (exit 0 after SIGTERM)"
	}
	warnings := append(res.KillWarnings, relay.warningLines()...)
	relay = nil
	res.RelayWarnings = len(warnings)
	res.WarningSamples = warnings[:min(len(warnings), 5)]

	// Accounting.
	var e2e []time.Duration
	for _, conv := range convs {
		res.Turns += conv.turns.Load()
		if conv.final.Load() < 0 {
			res.Unfinished++
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
	res.RestartedTurns = state.restarted.Load()
	res.EndToEnd = latencyOf(e2e)
	res.Spread = latencyOf(fanOutSpread(clients, convs))
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
	p("pilotdesk load: %d connections, %d conversations (%d subscribers each), %s, history in %s",
		r.Conns, r.Convs, r.Conns/r.Convs, r.Duration, r.History)
	p("  script: %d deltas of %d bytes per turn, %s apart; a new prompt as soon as a turn ends", r.Deltas, r.Payload, r.Interval)
	p("  connected and subscribed in       %.1f s", r.ConnectSeconds)
	p("  turns completed                   %d", r.Turns)
	p("  deliveries during the run         %d (%.0f per second)", r.Deliveries, r.DeliveriesPerSec)
	p("  deliveries in all                 %d (with the last turns after the run)", r.AllDeliveries)
	p("  lost deliveries                   %d", r.Lost)
	p("  repeated deliveries               %d", r.Repeats)
	p("  reconnects (resumed with sinceSeq) %d", r.Reconnects)
	if r.Kills > 0 {
		p("  relay killed (SIGKILL) mid-run     %d time(s); restarted on the same data dir in %.2f s; %d turns closed by it (idle error \"relay restarted\")",
			r.Kills, r.RestartSeconds, r.RestartedTurns)
	}
	if r.HistoryChecked > 0 || len(r.HistoryProblems) > 0 {
		p("  stored history replayed from 0    %d events, %d problems", r.HistoryChecked, len(r.HistoryProblems))
		for _, s := range r.HistoryProblems[:min(len(r.HistoryProblems), 5)] {
			p("    %s", s)
		}
	}
	p("  latency send -> subscriber        p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms (%d samples)",
		r.EndToEnd.P50, r.EndToEnd.P90, r.EndToEnd.P99, r.EndToEnd.Max, r.EndToEnd.Samples)
	p("  fan-out spread                    p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms (%d deliveries)",
		r.Spread.P50, r.Spread.P90, r.Spread.P99, r.Spread.Max, r.Spread.Samples)
	p("  relay peak RSS (VmHWM)            %.1f MiB (%.1f MiB connected, before streaming)",
		float64(r.RelayPeakRSSKiB)/1024, float64(r.RelayIdleRSSKiB)/1024)
	p("  relay CPU during the run          %.1f s (%.2f cores), %.2f µs per delivery", r.RelayCPUSeconds,
		r.RelayCPUSeconds/r.RunSeconds, r.RelayCPUPerDel)
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
		p("  kept: %s (relay.log, script.json, data/)", r.Dir)
	}
	if r.failed() {
		p("FAIL: %s", r.failure())
	} else {
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
// when the relay is killed and restarted) and keeps the highest peak RSS.
type relayUsage struct {
	cpu     time.Duration
	start   time.Duration
	peakKiB int64
}

func (u *relayUsage) begin(p *relayProc) {
	u.start, _ = procCPU(p.cmd.Process.Pid)
}

// end adds the CPU used since begin and notes the peak RSS.
func (u *relayUsage) end(p *relayProc) {
	if now, err := procCPU(p.cmd.Process.Pid); err == nil {
		u.cpu += now - u.start
		u.start = now
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
