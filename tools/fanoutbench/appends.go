package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// appendsTarget is issue #32's: the cluster's appends/s with the
// conversations spread over several streams at least twice one stream's,
// on the same three nodes.
const appendsTarget = 2.0

// appendWriters is how many conversations each of the three stores (a
// relay's, one per node) appends to at once: enough that one stream's
// leader, not the writers, is what bounds the rate.
const appendWriters = 32

// appendsHistory is one history of the run: its stores (one per node, as
// three relays would have) and its conversations' next seqs.
type appendsHistory struct {
	label  string
	stores []*jetstream.Store
	convs  [][]string // per store
	next   map[string]int64
}

// appendsRound is what one round of a history measured.
type appendsRound struct {
	rate     float64 // appends/s
	n        int64
	p50, p99 time.Duration
	natsCPU  time.Duration // the three nodes'
	busiest  time.Duration // the busiest node's
}

// perAppend is d over the round's appends, in µs.
func (r appendsRound) perAppend(d time.Duration) float64 {
	if r.n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(r.n)
}

// runAppends measures the cluster's appends/s (-appends D): on one 3-node
// nats-server cluster (R3, the nodes' sync_interval -nats-sync), a history
// of one stream and a history of -streams streams, each written by three
// stores (one per node) appending one small event at a time to
// 3×appendWriters conversations at once, for D a round, the histories'
// rounds alternating. It prints each history's median appends/s, the
// append latency, the nodes' CPU per append, and the ratio against the
// target; a missed target is printed (MISSED), not an error.
func runAppends(o options) error {
	if o.streams < 2 {
		return fmt.Errorf("-streams %d: the comparison needs 2 or more", o.streams)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, stop, err := natstest.StartProcess(3, "fanoutbench-appends-*", natstest.SyncInterval(o.natsSync),
		// The two histories are namespaces, whose buckets the relay
		// user's permissions do not name.
		natstest.WithPermissions(natstest.Permissions{Publish: []string{">"}, Subscribe: []string{">"}}))
	if err != nil {
		return err
	}
	defer stop()
	var pids []int
	var conns []*nats.Conn
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for _, n := range c.Nodes {
		pids = append(pids, n.PID())
		nc, err := nats.Connect(fmt.Sprintf("nats://%s@127.0.0.1:%d", url.UserPassword(c.User, c.Password), n.ClientPort),
			nats.Name("fanoutbench appends"), nats.MaxReconnects(-1))
		if err != nil {
			return err
		}
		conns = append(conns, nc)
	}
	// Each node's CPU: on this machine the three share its cores, so
	// the busiest node's CPU per append is also what bounds the rate of a
	// cluster whose nodes have cores of their own.
	nodeCPU := func() []time.Duration {
		out := make([]time.Duration, len(pids))
		for i, pid := range pids {
			if d, err := schedCPU(pid); err == nil {
				out[i] = d
			}
		}
		return out
	}
	ctx := context.Background()
	open := func(label, ns string, streams int) (*appendsHistory, error) {
		return openAppends(ctx, conns, logger, label, ns, streams, o.size)
	}
	one, err := open("1 stream", "one", 1)
	if err != nil {
		return err
	}
	many, err := open(fmt.Sprintf("%d streams", o.streams), "many", o.streams)
	if err != nil {
		return err
	}
	defer func() {
		for _, h := range []*appendsHistory{one, many} {
			for _, st := range h.stores {
				st.Close()
			}
		}
	}()
	fmt.Printf("appends: 3-node cluster, R3, sync_interval %s; 3 stores (one per node) x %d conversations appending one event of %d B at a time, %s a round, rounds alternating; load average %s\n",
		o.natsSync, appendWriters, o.size, o.appends, loadAverage())
	results := map[*appendsHistory][]appendsRound{}
	for r := range o.rounds {
		order := []*appendsHistory{one, many}
		if r%2 == 1 {
			order = []*appendsHistory{many, one}
		}
		for _, h := range order {
			cpu0 := nodeCPU()
			res, err := appendsOnce(h, o.appends, o.size)
			if err != nil {
				return err
			}
			for i, c := range nodeCPU() {
				d := c - cpu0[i]
				res.natsCPU += d
				res.busiest = max(res.busiest, d)
			}
			results[h] = append(results[h], res)
			fmt.Printf("  round %d %-10s %8.0f appends/s  p50 %6.2f ms  p99 %6.2f ms  CPU per append: nodes %5.1f µs, busiest node %5.1f µs\n",
				r+1, h.label, res.rate, ms(res.p50), ms(res.p99), res.perAppend(res.natsCPU), res.perAppend(res.busiest))
		}
	}
	reportAppends(o, results[one], results[many])
	return nil
}

// openAppends opens one history for the appends comparison, with streams
// event streams under the namespace ns: a store on each node's connection,
// each with appendWriters conversations made before the rounds.
func openAppends(ctx context.Context, conns []*nats.Conn, logger *slog.Logger, label, ns string, streams, size int) (*appendsHistory, error) {
	h := &appendsHistory{label: label, next: map[string]int64{}}
	for i, nc := range conns {
		st, err := jetstream.Open(ctx, nc, jetstream.Options{Replicas: 3, Streams: streams, Namespace: ns, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		h.stores = append(h.stores, st)
		var ids []string
		for j := range appendWriters {
			ids = append(ids, fmt.Sprintf("%s-%d-%d", ns, i, j))
		}
		h.convs = append(h.convs, ids)
	}
	// The conversations exist before the rounds: a round measures
	// appends to known conversations, as a streaming turn makes.
	for i, st := range h.stores {
		var b history.Batch
		for _, id := range h.convs[i] {
			b.Conversations = append(b.Conversations, history.Conversation{ID: id, Title: id, LastSeq: 1, UpdatedAt: time.Now()})
			b.Events = append(b.Events, appendEvent(id, 1, size))
			h.next[id] = 2
		}
		if err := st.Write(ctx, b); err != nil {
			return nil, fmt.Errorf("%s: create the conversations: %w", label, err)
		}
	}
	return h, nil
}

// reportAppends prints the medians of the rounds of one stream and of
// many, their ratio against the target, and the busiest node's CPU per
// append of each.
func reportAppends(o options, one, many []appendsRound) {
	median := func(rounds []appendsRound) appendsRound {
		rs := slices.Clone(rounds)
		slices.SortFunc(rs, func(a, b appendsRound) int {
			switch {
			case a.rate < b.rate:
				return -1
			case a.rate > b.rate:
				return 1
			}
			return 0
		})
		return rs[len(rs)/2]
	}
	m1, mn := median(one), median(many)
	ratio := mn.rate / m1.rate
	verdict := "met"
	if ratio < appendsTarget {
		verdict = "MISSED"
	}
	fmt.Printf("appends median: 1 stream %.0f/s (p99 %.2f ms), %d streams %.0f/s (p99 %.2f ms): %.2fx (target >= %.1fx: %s)\n",
		m1.rate, ms(m1.p99), o.streams, mn.rate, ms(mn.p99), ratio, appendsTarget, verdict)
	// What bounds a cluster whose nodes do not share cores: the busiest
	// node's CPU per append (the one stream's leader, or each of the
	// spread leaders' share).
	b1, bn := m1.perAppend(m1.busiest), mn.perAppend(mn.busiest)
	if b1 > 0 && bn > 0 {
		fmt.Printf("appends, busiest node's CPU per append: 1 stream %.1f µs, %d streams %.1f µs: a cluster of nodes with cores of their own would take %.2fx the appends (%d cores here for the three nodes and the writers)\n",
			b1, o.streams, bn, b1/bn, runtime.NumCPU())
	}
}

// appendsOnce runs one round of a history: every conversation appends one
// event after another for d.
func appendsOnce(h *appendsHistory, d time.Duration, size int) (appendsRound, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	deadline := time.Now().Add(d)
	var (
		n     atomic.Int64
		mu    sync.Mutex
		lat   []time.Duration
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	for i, st := range h.stores {
		for _, id := range h.convs[i] {
			seq := h.next[id]
			wg.Go(func() {
				var mine []time.Duration
				for time.Now().Before(deadline) {
					t := time.Now()
					err := st.Write(ctx, history.Batch{Events: []history.Event{appendEvent(id, seq, size)}})
					if err != nil {
						mu.Lock()
						first = cmpErr(first, fmt.Errorf("%s: append to %s: %w", h.label, id, err))
						mu.Unlock()
						return
					}
					mine = append(mine, time.Since(t))
					seq++
					n.Add(1)
				}
				mu.Lock()
				lat = append(lat, mine...)
				h.next[id] = seq
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	took := time.Since(start)
	if first != nil {
		return appendsRound{}, first
	}
	slices.Sort(lat)
	at := func(q float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[int(q*float64(len(lat)-1))]
	}
	return appendsRound{rate: float64(n.Load()) / took.Seconds(), n: n.Load(), p50: at(0.5), p99: at(0.99)}, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// appendEvent is a delta of a conversation: a frame of size bytes of text.
func appendEvent(id string, seq int64, size int) history.Event {
	frame := fmt.Sprintf(`{"type":"copilot:delta","conversationId":%q,"seq":%d,"text":%q}`, id, seq, strings.Repeat("x", size))
	return history.Event{ConversationID: id, Seq: seq, Type: "copilot:delta", Frame: []byte(frame)}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
