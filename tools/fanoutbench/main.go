// Command fanoutbench measures the relay's fan-out over real loopback
// WebSockets: one conversation streams N deltas to M subscribers.
//
//	go run ./tools/fanoutbench                 # 4000 deltas of 64 B to 50 subscribers, in-memory history
//	go run ./tools/fanoutbench -store sqlite   # the same on the SQLite store
//	go run ./tools/fanoutbench -store jetstream -nats cluster   # on an R3 stream of a 3-node nats-server cluster
//	go run ./tools/fanoutbench -store jetstream -nats embedded  # on a JetStream node in the relay's process
//	go run ./tools/fanoutbench -store jetstream -nats cluster -compare sqlite   # and a relay on SQLite, rounds alternating: the ratio
//	go run ./tools/fanoutbench -replay 100000 -store jetstream -nats cluster   # replay of a 100,000-event conversation, and on SQLite
//	go run ./tools/fanoutbench -appends 5s -streams 3   # a 3-node cluster's appends/s, one stream against three
//
// The relay runs in a child process (this binary re-executed), so that its
// CPU time, allocations and RSS are its own; the clients run in this process.
// A round prints deliveries per second (a delivery is one delta frame read by
// one subscriber), p50/p99 delivery latency (from the agent's Emit to the
// client's read, both clocks are the machine's), lost deliveries, and the
// relay's CPU time and heap allocations per delivery. The rounds are a burst
// (the agent emits as fast as the relay takes them, so latency there is
// queueing); a paced round then measures latency at a steady rate. Last, the
// relay's RSS with idle connections open.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

const roleEnv = "PILOTDESK_FANOUTBENCH_ROLE"

// storeEnv, when set, is the relay process's store instead of -store: the
// -compare relay's.
const storeEnv = "PILOTDESK_FANOUTBENCH_STORE"

type options struct {
	subscribers int
	deltas      int
	size        int
	rounds      int
	pacedRate   int
	idle        int
	store       string
	nats        string
	sync        string
	natsSync    string
	sendQueue   int
	cpuProfile  string
	anchor      bool
	replay      int
	compare     string
	appends     time.Duration
	streams     int
}

var exitCode int

func main() {
	defer func() { os.Exit(exitCode) }()
	var o options
	flag.IntVar(&o.subscribers, "subscribers", 50, "subscribers of the streaming conversation")
	flag.IntVar(&o.deltas, "deltas", 4000, "deltas per round")
	flag.IntVar(&o.size, "size", 64, "bytes of text per delta")
	flag.IntVar(&o.rounds, "rounds", 3, "burst rounds (the median is reported)")
	flag.IntVar(&o.pacedRate, "paced-rate", 2000, "deltas per second of the paced latency round (0: skip it)")
	flag.IntVar(&o.idle, "idle", 1000, "idle connections for the RSS measurement (0: skip it)")
	flag.StringVar(&o.store, "store", "memory", "history store of the relay: memory, sqlite or jetstream")
	flag.StringVar(&o.nats, "nats", "cluster", "with -store jetstream: cluster (a 3-node nats-server cluster on loopback, R3) or embedded (a node in the relay's process)")
	flag.StringVar(&o.sync, "sqlite-sync", "FULL", "SQLite synchronous setting with -store sqlite (FULL, NORMAL)")
	flag.StringVar(&o.natsSync, "nats-sync", "always", "the cluster nodes' JetStream sync_interval with -nats cluster: always (fsync before every ack, as docs/operations.md configures them) or a duration (2m is JetStream's default) to measure what the fsync costs")
	flag.IntVar(&o.sendQueue, "send-queue", 0, "relay.Config.SendQueue (0: the relay's default)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write CPU profiles: FILE.clients and FILE.relay")
	flag.BoolVar(&o.anchor, "anchor", true, "measure nats-server's core fan-out (same subscribers, same message size) after the burst rounds, and print the relay's CPU per delivery as a ratio of it")
	flag.IntVar(&o.replay, "replay", 0, "instead of the fan-out, measure the replay of a conversation of `N` events: on SQLite, and on -store jetstream (-nats cluster) in the same run")
	flag.StringVar(&o.compare, "compare", "", "with -store jetstream: run the same burst rounds on a relay with this store (sqlite) in the same run, alternating, and print the throughput ratio against the target (>= 0.5x)")
	flag.DurationVar(&o.appends, "appends", 0, "instead of the fan-out, measure the appends/s of a 3-node cluster (R3, -nats-sync) with the conversations in one stream and spread over -streams streams, rounds of this `DURATION` alternating (-rounds each), and print the ratio against the target (>= 2x)")
	flag.IntVar(&o.streams, "streams", 3, "with -appends: the streams of the sharded history (jetstream.Options.Streams, serve --nats-streams)")
	flag.Parse()

	role := "clients"
	if os.Getenv(roleEnv) == "relay" {
		role = "relay"
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile + "." + role)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fanoutbench:", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}

	if os.Getenv(roleEnv) == "relay" {
		if s := os.Getenv(storeEnv); s != "" {
			o.store = s
		}
		if err := runRelay(o); err != nil {
			fmt.Fprintln(os.Stderr, "fanoutbench relay:", err)
			exitCode = 1
		}
		return
	}
	run := runBench
	switch {
	case o.appends > 0:
		run = runAppends
	case o.replay > 0:
		run = runReplay
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "fanoutbench:", err)
		exitCode = 1
	}
}

// child is the relay process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
}

// startChild starts the relay process, with env added to its environment.
func startChild(env ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(append(os.Environ(), roleEnv+"=relay"), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ADDR ") {
		cmd.Process.Kill()
		return nil, fmt.Errorf("the relay process did not start: %q %v", line, err)
	}
	return &child{cmd: cmd, stdin: stdin, addr: strings.TrimSpace(strings.TrimPrefix(line, "ADDR "))}, nil
}

// stop closes the child's stdin, which makes it shut the relay down.
func (c *child) stop() error {
	c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		return errors.New("the relay process did not exit; killed")
	}
}

type stats struct {
	CPU     time.Duration `json:"cpu"` // user + system
	Mallocs uint64        `json:"mallocs"`
	RSS     int64         `json:"rss"` // bytes
}

func (c *child) stats(gc bool) (stats, error) {
	url := "http://" + c.addr + "/stats"
	if gc {
		url += "?gc=1"
	}
	resp, err := http.Get(url)
	if err != nil {
		return stats{}, err
	}
	defer resp.Body.Close()
	var s stats
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

type roundResult struct {
	deliveriesPerSec float64
	p50, p99         time.Duration
	lost             int
	cpuPerDelivery   time.Duration
	natsPerDelivery  time.Duration // the nats-server processes' CPU (-nats cluster)
	// schedPerDelivery is the measured process's on-CPU time (schedCPU),
	// the measure the anchor's ratio compares.
	schedPerDelivery time.Duration
	allocsPerDeliv   float64
	delivered        int
	frameBytes       int // the delta frames' mean length
}

func runBench(o options) error {
	if o.compare != "" && (o.store != "jetstream" || o.compare == "jetstream") {
		return fmt.Errorf("-compare goes with -store jetstream and names another store (sqlite, memory)")
	}
	if o.store == "jetstream" && o.nats == "cluster" {
		stop, err := startCluster(natstest.SyncInterval(o.natsSync))
		if err != nil {
			return err
		}
		defer stop()
	}
	ch, err := startChild()
	if err != nil {
		return err
	}
	defer ch.stop()
	url := "ws://" + ch.addr + "/ws"
	store := o.store
	if store == "jetstream" {
		store += " (" + o.nats + ")"
		if o.nats == "cluster" {
			store = fmt.Sprintf("jetstream (cluster, sync_interval %s)", o.natsSync)
		}
	}
	fmt.Printf("fan-out: 1 conversation, %d deltas of %d B, %d subscribers, %s store; relay in process %d; load average %s\n",
		o.deltas, o.size, o.subscribers, store, ch.cmd.Process.Pid, loadAverage())
	defer func() { fmt.Printf("load average at the end: %s\n", loadAverage()) }()

	subs, err := dialAll(url, o.subscribers)
	if err != nil {
		return err
	}
	defer closeAll(subs)

	// -compare: a second relay process on the other store, the same
	// subscribers and deltas, its rounds alternating with the first's so
	// that both see the same machine.
	var base *child
	var baseSubs []*subscriber
	if o.compare != "" {
		if base, err = startChild(storeEnv + "=" + o.compare); err != nil {
			return err
		}
		defer base.stop()
		if baseSubs, err = dialAll("ws://"+base.addr+"/ws", o.subscribers); err != nil {
			return err
		}
		defer closeAll(baseSubs)
		fmt.Printf("compared with: the same on the %s store, relay in process %d, rounds alternating\n", o.compare, base.cmd.Process.Pid)
		if _, err := round(base, baseSubs, "warmup", max(o.deltas/4, 100), o.size, 0); err != nil {
			return err
		}
	}
	// A warm-up round (not reported): first connections, first allocations.
	if _, err := round(ch, subs, "warmup", max(o.deltas/4, 100), o.size, 0); err != nil {
		return err
	}
	fmt.Printf("%-14s %14s %10s %10s %6s %16s %16s\n", "round", "deliveries/s", "p50", "p99", "lost", "relay CPU/deliv", "allocs/deliv")
	var results, baseResults []roundResult
	for i := range o.rounds {
		r, err := round(ch, subs, fmt.Sprintf("burst-%d", i), o.deltas, o.size, 0)
		if err != nil {
			return err
		}
		results = append(results, r)
		printRound(fmt.Sprint(i+1), r, true)
		if base != nil {
			r, err := round(base, baseSubs, fmt.Sprintf("burst-%d", i), o.deltas, o.size, 0)
			if err != nil {
				return fmt.Errorf("%s relay: %w", o.compare, err)
			}
			baseResults = append(baseResults, r)
			printRound(fmt.Sprintf("%d %s", i+1, o.compare), r, false)
		}
	}
	var med roundResult
	if len(results) > 0 {
		med = median(results)
		printRound("median", med, true)
		fmt.Printf("%s: %.0f events stored per second (the median round's deliveries/s over its %d subscribers)\n",
			store, med.deliveriesPerSec/float64(o.subscribers), o.subscribers)
	}
	if len(baseResults) > 0 {
		if err := compareVerdict(o, store, med, baseResults); err != nil {
			return err
		}
	}
	if o.anchor && len(results) > 0 {
		if err := anchorVerdict(o, med); err != nil {
			return err
		}
	}
	if o.pacedRate > 0 {
		r, err := round(ch, subs, "paced", o.deltas, o.size, o.pacedRate)
		if err != nil {
			return err
		}
		printRound(fmt.Sprintf("paced %d/s", o.pacedRate), r, true)
	}
	closeAll(subs)

	if o.idle > 0 {
		if err := idleRSS(ch, url, o.idle); err != nil {
			return err
		}
	}
	if med.lost > 0 {
		return fmt.Errorf("%d deliveries lost", med.lost)
	}
	return nil
}

// compareVerdict prints the -compare relay's median round and how the
// measured store's throughput compares with it; deliveries lost there are
// an error.
func compareVerdict(o options, store string, med roundResult, baseResults []roundResult) error {
	bmed := median(baseResults)
	printRound("median "+o.compare, bmed, false)
	ratio := med.deliveriesPerSec / bmed.deliveriesPerSec
	verdict := "met"
	if ratio < compareTarget {
		verdict = "MISSED"
	}
	fmt.Printf("%s throughput %.0f deliveries/s = %.2fx the %s relay's %.0f in the same run (medians of %d alternating burst rounds; target >= %.1fx: %s)\n",
		store, med.deliveriesPerSec, ratio, o.compare, bmed.deliveriesPerSec, len(baseResults), compareTarget, verdict)
	if bmed.lost > 0 {
		return fmt.Errorf("%d deliveries lost on %s", bmed.lost, o.compare)
	}
	return nil
}

// anchorVerdict runs the nats-server anchor (-anchor) with the median
// round's frame size and prints the CPU per delivery of each.
func anchorVerdict(o options, med roundResult) error {
	a, err := runAnchor(o, med.frameBytes)
	if err != nil {
		return err
	}
	ratio := float64(med.schedPerDelivery) / float64(a.schedPerDelivery)
	verdict := "met"
	if ratio > anchorTarget {
		verdict = "MISSED"
	}
	fmt.Printf("pilotdesk CPU per delivery %s = %.2fx nats-server's %s (on-CPU time of each process, medians; target <= %.1fx: %s); throughput %.2fx\n",
		med.schedPerDelivery.Round(time.Nanosecond), ratio, a.schedPerDelivery.Round(time.Nanosecond), anchorTarget, verdict,
		med.deliveriesPerSec/a.deliveriesPerSec)
	return nil
}

// idleRSS prints the relay's RSS with n idle connections open and without.
func idleRSS(ch *child, url string, n int) error {
	before, err := ch.stats(true)
	if err != nil {
		return err
	}
	idle, err := dialIdle(url, n)
	if err != nil {
		return err
	}
	after, err := ch.stats(true)
	closeAll(idle)
	if err != nil {
		return err
	}
	fmt.Printf("relay RSS with %d idle connections: %.1f MiB (%.1f MiB without them: %.1f KiB per connection)\n",
		n, mib(after.RSS), mib(before.RSS), float64(after.RSS-before.RSS)/1024/float64(n))
	return nil
}

// loadAverage is the machine's 1-minute load average: the figures are only
// comparable between runs on an equally quiet machine.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// printRound prints a round's row; withNATS adds the nats-server
// processes' CPU (-nats cluster) on a line of its own.
func printRound(name string, r roundResult, withNATS bool) {
	fmt.Printf("%-14s %14.0f %10s %10s %6d %16s %16.2f\n", name, r.deliveriesPerSec,
		r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), r.lost, r.cpuPerDelivery.Round(10*time.Nanosecond), r.allocsPerDeliv)
	if withNATS && len(natsPIDs) > 0 {
		fmt.Printf("%-14s %71s %16s\n", "", "nats-server CPU/deliv", r.natsPerDelivery.Round(10*time.Nanosecond))
	}
}

func median(rs []roundResult) roundResult {
	pick := func(f func(roundResult) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return roundResult{
		deliveriesPerSec: pick(func(r roundResult) float64 { return r.deliveriesPerSec }),
		p50:              time.Duration(pick(func(r roundResult) float64 { return float64(r.p50) })),
		p99:              time.Duration(pick(func(r roundResult) float64 { return float64(r.p99) })),
		lost:             int(pick(func(r roundResult) float64 { return float64(r.lost) })),
		cpuPerDelivery:   time.Duration(pick(func(r roundResult) float64 { return float64(r.cpuPerDelivery) })),
		natsPerDelivery:  time.Duration(pick(func(r roundResult) float64 { return float64(r.natsPerDelivery) })),
		allocsPerDeliv:   pick(func(r roundResult) float64 { return r.allocsPerDeliv }),
		schedPerDelivery: time.Duration(pick(func(r roundResult) float64 { return float64(r.schedPerDelivery) })),
		frameBytes:       int(pick(func(r roundResult) float64 { return float64(r.frameBytes) })),
	}
}

// compareTarget is issue #15's: the relay on the 3-node JetStream cluster
// delivers at least half as fast as the single relay on SQLite.
const compareTarget = 0.5

// anchorTarget is issue #32's: the relay's CPU per delivery at most 0.4x
// nats-server's core fan-out's, in one run (issue #15 asked 0.8x).
const anchorTarget = 0.4

// subscriber is one client connection.
type subscriber struct {
	conn *websocket.Conn
	buf  []byte
}

func dial(url string) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(-1)
	return c, nil
}

func dialAll(url string, n int) ([]*subscriber, error) {
	subs := make([]*subscriber, n)
	for i := range subs {
		c, err := dial(url)
		if err != nil {
			closeAll(subs[:i])
			return nil, fmt.Errorf("dial subscriber %d: %w", i, err)
		}
		subs[i] = &subscriber{conn: c, buf: make([]byte, 64<<10)}
	}
	return subs, nil
}

func closeAll[T any](cs []T) {
	for _, c := range cs {
		switch v := any(c).(type) {
		case *subscriber:
			if v != nil {
				v.conn.CloseNow()
			}
		case *websocket.Conn:
			if v != nil {
				v.CloseNow()
			}
		}
	}
}

func send(ctx context.Context, c *websocket.Conn, msgType string, data any) error {
	b, err := json.Marshal(map[string]any{"type": msgType, "data": data})
	if err != nil {
		return err
	}
	return c.Write(ctx, websocket.MessageText, b)
}

// read reads one message into the subscriber's buffer.
func (s *subscriber) read(ctx context.Context) ([]byte, error) {
	_, r, err := s.conn.Reader(ctx)
	if err != nil {
		return nil, err
	}
	n := 0
	for {
		if n == len(s.buf) {
			s.buf = append(s.buf, make([]byte, len(s.buf))...)
		}
		m, err := r.Read(s.buf[n:])
		n += m
		if err == io.EOF {
			return s.buf[:n], nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// round streams one turn of deltas (rate 0: as fast as possible) to every
// subscriber and measures it.
func round(ch *child, subs []*subscriber, id string, deltas, size, rate int) (roundResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, s := range subs {
		if err := send(ctx, s.conn, "copilot:subscribe", map[string]any{"conversationId": id}); err != nil {
			return roundResult{}, err
		}
	}
	for _, s := range subs {
		for {
			msg, err := s.read(ctx)
			if err != nil {
				return roundResult{}, fmt.Errorf("wait for copilot:subscribed: %w", err)
			}
			if bytes.HasPrefix(msg, []byte(`{"type":"copilot:subscribed"`)) {
				break
			}
		}
	}
	natsBefore := natsCPU()
	before, err := ch.stats(false)
	if err != nil {
		return roundResult{}, err
	}
	schedBefore, _ := schedCPU(ch.cmd.Process.Pid)

	type result struct {
		latencies []int64
		bytes     int
		got       int
		lastRecv  int64
		firstEmit int64
		err       error
	}
	results := make([]result, len(subs))
	var wg sync.WaitGroup
	for i, s := range subs {
		wg.Go(func() {
			res := result{latencies: make([]int64, 0, deltas), firstEmit: -1}
			defer func() { results[i] = res }()
			prevSeq := int64(-1)
			for {
				msg, err := s.read(context.Background())
				now := time.Now().UnixNano()
				if err != nil {
					res.err = err
					return
				}
				switch {
				case bytes.HasPrefix(msg, []byte(`{"type":"copilot:delta"`)):
					seq := intAfter(msg, []byte(`"seq":`))
					if prevSeq >= 0 && seq != prevSeq+1 {
						res.err = fmt.Errorf("seq %d after %d", seq, prevSeq)
						return
					}
					prevSeq = seq
					emitted := intAfter(msg, []byte(`"content":"t=`))
					res.latencies = append(res.latencies, now-emitted)
					if res.firstEmit < 0 || emitted < res.firstEmit {
						res.firstEmit = emitted
					}
					res.got++
					res.bytes += len(msg)
					res.lastRecv = now
				case bytes.HasPrefix(msg, []byte(`{"type":"copilot:idle"`)):
					return
				case bytes.HasPrefix(msg, []byte(`{"type":"copilot:user_message"`)):
					prevSeq = intAfter(msg, []byte(`"seq":`))
				case bytes.HasPrefix(msg, []byte(`{"type":"error"`)), bytes.HasPrefix(msg, []byte(`{"type":"copilot:error"`)):
					res.err = fmt.Errorf("relay: %s", msg)
					return
				}
			}
		})
	}
	// Reads use a context without deadline (a deadline arms a timer per
	// read); a watchdog closes the connections if the round hangs.
	watchdog := time.AfterFunc(2*time.Minute, func() { closeAll(subs) })
	defer watchdog.Stop()
	prompt := fmt.Sprintf("%d %d %d", deltas, size, rate)
	if err := send(ctx, subs[0].conn, "copilot:send", map[string]any{"conversationId": id, "prompt": prompt}); err != nil {
		return roundResult{}, err
	}
	wg.Wait()
	after, err := ch.stats(false)
	if err != nil {
		return roundResult{}, err
	}
	natsAfter := natsCPU()
	schedAfter, _ := schedCPU(ch.cmd.Process.Pid)

	var all []int64
	var first, last int64 = -1, 0
	got, frameBytes := 0, 0
	for i, r := range results {
		if r.err != nil {
			return roundResult{}, fmt.Errorf("subscriber %d: %w", i, r.err)
		}
		all = append(all, r.latencies...)
		got += r.got
		frameBytes += r.bytes
		if r.firstEmit >= 0 && (first < 0 || r.firstEmit < first) {
			first = r.firstEmit
		}
		last = max(last, r.lastRecv)
	}
	if got == 0 {
		return roundResult{}, errors.New("nothing was delivered")
	}
	res := deliveries(all, got, deltas*len(subs), first, last, schedAfter-schedBefore)
	res.cpuPerDelivery = (after.CPU - before.CPU) / time.Duration(got)
	res.natsPerDelivery = (natsAfter - natsBefore) / time.Duration(got)
	res.allocsPerDeliv = float64(after.Mallocs-before.Mallocs) / float64(got)
	res.frameBytes = frameBytes / got
	return res, nil
}

// deliveries is what the relay's rounds and the anchor's measure alike, so
// their ratio compares like with like: got of sent deliveries between first
// (the first send) and last (the last receipt), in UnixNano; all, the
// latencies in ns (sorted here); sched, the measured process's on-CPU time
// for the round. got must not be 0.
func deliveries(all []int64, got, sent int, first, last int64, sched time.Duration) roundResult {
	slices.Sort(all)
	pct := func(p float64) time.Duration { return time.Duration(all[int(p*float64(len(all)-1))]) }
	return roundResult{
		deliveriesPerSec: float64(got) / time.Duration(last-first).Seconds(),
		p50:              pct(0.50),
		p99:              pct(0.99),
		lost:             sent - got,
		schedPerDelivery: sched / time.Duration(got),
		delivered:        got,
	}
}

// intAfter parses the decimal integer that follows key in msg.
func intAfter(msg, key []byte) int64 {
	i := bytes.Index(msg, key)
	if i < 0 {
		return -1
	}
	n, j := int64(0), i+len(key)
	for ; j < len(msg) && msg[j] >= '0' && msg[j] <= '9'; j++ {
		n = n*10 + int64(msg[j]-'0')
	}
	return n
}

// dialIdle opens n connections, each subscribed to a conversation of its
// own, and leaves them idle.
func dialIdle(url string, n int) ([]*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conns := make([]*websocket.Conn, 0, n)
	for i := range n {
		c, err := dial(url)
		if err != nil {
			closeAll(conns)
			return nil, fmt.Errorf("dial idle connection %d: %w", i, err)
		}
		conns = append(conns, c)
		if err := send(ctx, c, "copilot:subscribe", map[string]any{"conversationId": "idle-" + strconv.Itoa(i)}); err != nil {
			closeAll(conns)
			return nil, err
		}
		if _, _, err := c.Read(ctx); err != nil {
			closeAll(conns)
			return nil, err
		}
	}
	return conns, nil
}
