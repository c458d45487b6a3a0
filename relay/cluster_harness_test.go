package relay_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
	"github.com/pilotdesk/pilotdesk/relay/history/memcluster"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// The cluster tests' harness (the tests are in cluster_test.go and the
// cluster*_test.go files beside it): the history backends they run on,
// relays joined to one, and the frames their clients send and expect.

// clusterScript is the agent every relay runs: deterministic turns.
func clusterScript(t *testing.T) *script.Script {
	t.Helper()
	var stream, long []string
	for i := range 40 {
		stream = append(stream, fmt.Sprintf(`{"delta": "d%d "}`, i), `{"sleep": "5ms"}`)
	}
	for i := range 150 {
		long = append(long, fmt.Sprintf(`{"delta": "l%d "}`, i), `{"sleep": "100ms"}`)
	}
	src := `{"turns": [
	  {"match": "stream", "steps": [` + strings.Join(stream, ",") + `]},
	  {"match": "long", "steps": [` + strings.Join(long, ",") + `]},
	  {"match": "question", "steps": [{"delta": "Asking. "}, {"ask": {"question": "Which?", "choices": ["left", "right"], "allowFreeform": false}}, {"delta": "You said {{answer}}."}]},
	  {"match": "mode", "steps": [{"ask": {"question": "Go on?"}}, {"tool": {"name": "bash", "arguments": {"command": "ls"}, "result": "ok"}}, {"delta": "tool {{tool}}"}]},
	  {"steps": [{"delta": "Echo: {{prompt}}"}]}
	]}`
	s, err := script.Parse("cluster.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testBackend is what the relays share: a NATS server their connections
// go to, or (net set) the in-memory cluster.
type testBackend struct {
	name     string
	replicas int
	connect  func(t testing.TB, i int) *nats.Conn
	// loseAck, if set, is the next relay's store's LoseAck.
	loseAck func(conversationID string) bool
	// net is the in-memory cluster's, nil on NATS.
	net *memcluster.Net
}

func memoryBackend(testing.TB) testBackend {
	return testBackend{name: "memory", net: memcluster.New()}
}

func embeddedBackend(t testing.TB) testBackend {
	node, err := jetstream.StartEmbedded(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Shutdown)
	return testBackend{name: "embedded", replicas: 1, connect: func(t testing.TB, i int) *nats.Conn {
		nc, err := node.Connect(fmt.Sprintf("relay %d", i))
		if err != nil {
			t.Fatal(err)
		}
		return nc
	}}
}

func clusterBackend(t testing.TB) testBackend {
	b, _ := clusterBackendWith(t)
	return b
}

func clusterBackendWith(t testing.TB) (testBackend, *natstest.Cluster) {
	c := natstest.Start(t, 3)
	return testBackend{name: "cluster", replicas: 3, connect: func(t testing.TB, i int) *nats.Conn {
		nc, err := c.Connect(i % len(c.Nodes))
		if err != nil {
			t.Fatal(err)
		}
		return nc
	}}, c
}

// eachBackend runs fn on the in-memory cluster and on an in-process NATS
// node.
func eachBackend(t *testing.T, fn func(t *testing.T, b testBackend)) {
	t.Run("memory", func(t *testing.T) {
		checkNoLeaks(t)
		fn(t, memoryBackend(t))
	})
	t.Run("embedded", func(t *testing.T) {
		checkNoLeaks(t)
		fn(t, embeddedBackend(t))
	})
}

// eachNATS runs fn on an in-process NATS node and on a 3-node cluster:
// for what the JetStream store does beyond history.Cluster.
func eachNATS(t *testing.T, fn func(t *testing.T, b testBackend)) {
	t.Run("embedded", func(t *testing.T) {
		checkNoLeaks(t)
		fn(t, embeddedBackend(t))
	})
	t.Run("cluster", func(t *testing.T) {
		checkNoLeaks(t)
		fn(t, clusterBackend(t))
	})
}

// member is one relay of the cluster.
type member struct {
	srv     *relaytest.Server
	store   history.Store
	cluster history.Cluster
	logs    *logRecorder
	nc      *nats.Conn          // on NATS
	js      *jetstream.Cluster  // on NATS
	mem     *memcluster.Cluster // in memory
}

// cut cuts the relay off from the others, for good: its NATS connection
// closes.
func (m *member) cut() {
	if m.mem != nil {
		m.mem.Cut()
		return
	}
	m.nc.Close()
}

// reconnect breaks the relay's connection, which comes back at once:
// what was told meanwhile is lost to it.
func (m *member) reconnect(t *testing.T) {
	t.Helper()
	if m.mem != nil {
		m.mem.Reconnect()
		return
	}
	if err := m.nc.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
}

// memberStats is what the relay follows: jetstream.ClusterStats.
type memberStats = jetstream.ClusterStats

func (m *member) stats() memberStats {
	if m.mem != nil {
		st := m.mem.Stats()
		return memberStats{Followed: st.Followed, LiveMessages: st.LiveMessages}
	}
	return m.js.Stats()
}

// quietStore is a store on b's history of no relay: what it writes nobody
// is told of.
func (b testBackend) quietStore(t *testing.T, i int) history.Store {
	t.Helper()
	if b.net != nil {
		return b.net.NewStore()
	}
	nc := b.connect(t, i)
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	quiet, err := jetstream.Open(ctx, nc, jetstream.Options{Replicas: b.replicas, Streams: natsStreams(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { quiet.Close() })
	return quiet
}

const testLease = 2 * time.Second

// natsStreams is the event streams of the NATS backends' histories:
// PILOTDESK_NATS_STREAMS=3 runs these tests on a history spread over
// three (docs/scale-out.md, Several event streams); 0, the default, is
// the store's (one).
func natsStreams(t testing.TB) int {
	t.Helper()
	v := os.Getenv("PILOTDESK_NATS_STREAMS")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("PILOTDESK_NATS_STREAMS=%q: want a count of streams", v)
	}
	return n
}

func (b testBackend) relay(t *testing.T, i int, s *script.Script) *member {
	t.Helper()
	return b.relayWith(t, i, s, jetstream.ClusterOptions{Lease: testLease})
}

func (b testBackend) relayWith(t testing.TB, i int, s *script.Script, opts jetstream.ClusterOptions) *member {
	return b.relayAgent(t, i, script.New(s), opts)
}

func (b testBackend) relayAgent(t testing.TB, i int, agent session.Agent, opts jetstream.ClusterOptions) *member {
	t.Helper()
	return b.relayMod(t, i, agent, opts, nil)
}

// relayMod starts relay i: its own NATS connection, store and cluster
// membership (opts), agent behind it, and its Config changed by mod (if
// not nil) before it starts. Its log is shown if the test fails.
func (b testBackend) relayMod(t testing.TB, i int, agent session.Agent, opts jetstream.ClusterOptions, mod func(*relay.Config)) *member {
	t.Helper()
	m := &member{logs: newLogRecorder()}
	if b.net != nil {
		s := b.net.NewStore()
		m.mem = b.net.NewCluster(s, memcluster.Options{Lease: opts.Lease, RenewEvery: opts.RenewEvery})
		m.store, m.cluster = s, m.mem
	} else {
		m.nc = b.connect(t, i)
		t.Cleanup(m.nc.Close)
		ctx := context.Background()
		store, err := jetstream.Open(ctx, m.nc, jetstream.Options{Replicas: b.replicas, LoseAck: b.loseAck, Streams: natsStreams(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		cl, err := jetstream.NewCluster(ctx, store, opts)
		if err != nil {
			t.Fatal(err)
		}
		m.store, m.js, m.cluster = store, cl, cl
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("relay %d's log:\n%s", i, m.logs.all())
		}
	})
	cfg := relay.Config{Agent: agent, Store: m.store, Cluster: m.cluster, Logger: m.logs.logger()}
	if mod != nil {
		mod(&cfg)
	}
	m.srv = relaytest.Start(t, cfg)
	return m
}

// pair starts relays A (0) and B (1) on b, both running clusterScript
// with the test lease, and dials a client to each; id, name and the
// testBackend's, is the test's conversation.
func (b testBackend) pair(t *testing.T, name string) (a, bb *member, ca, cb *relaytest.Client, id string) {
	t.Helper()
	return b.pairWith(t, name, testLease)
}

// pairWith is pair with relays of the given lease: shareLease for a test
// in which no relay is lost, where a busy machine that stalls a relay
// past the test lease must not end its turns.
func (b testBackend) pairWith(t *testing.T, name string, lease time.Duration) (a, bb *member, ca, cb *relaytest.Client, id string) {
	t.Helper()
	s := clusterScript(t)
	opts := jetstream.ClusterOptions{Lease: lease}
	a, bb = b.relayWith(t, 0, s, opts), b.relayWith(t, 1, s, opts)
	return a, bb, a.srv.Dial(t), bb.srv.Dial(t), name + "-" + b.name
}

// send sends prompt to conversation id through cl.
func send(cl *relaytest.Client, id, prompt string) {
	cl.Send("copilot:send", map[string]any{"conversationId": id, "prompt": prompt})
}

// subscribe subscribes cl to conversation id with no sinceSeq: nothing is
// replayed.
func subscribe(cl *relaytest.Client, id string) {
	cl.Send("copilot:subscribe", map[string]any{"conversationId": id})
}

// replayFrom subscribes cl to conversation id with sinceSeq since: the
// events after it are replayed first.
func replayFrom(cl *relaytest.Client, id string, since int) {
	cl.Send("copilot:subscribe", map[string]any{"conversationId": id, "sinceSeq": since})
}

// wantIdle waits for cl's next idle and fails the test unless its status
// is status; who names the client in the failure.
func wantIdle(t *testing.T, cl *relaytest.Client, who, status string) relaytest.Frame {
	t.Helper()
	idle := cl.WaitFor("copilot:idle", nil)
	if idle.Field("status") != status {
		t.Fatalf("%s got %s, want status %s", who, idle.Raw, status)
	}
	return idle
}

// collect reads frames of conversation id until one of msgType whose
// match is true, and returns them all, that one included.
func collect(t *testing.T, cl *relaytest.Client, msgType string, match func(relaytest.Frame) bool) []relaytest.Frame {
	t.Helper()
	f, skipped := cl.WaitForCollect(msgType, match)
	return append(skipped, f)
}

// eventSeqs are the seqs of the conversation events among frames, and
// the test fails unless they follow on from after, with no gap and no
// repeat.
func eventSeqs(t *testing.T, who string, frames []relaytest.Frame, after int64) []int64 {
	t.Helper()
	var seqs []int64
	next := after + 1
	for _, f := range frames {
		if f.Type == "copilot:subscribed" || f.Type == "copilot:conversations" || f.Type == "copilot:conversation" || f.Type == "error" || f.Type == "copilot:pong" {
			continue
		}
		s := f.Seq()
		if s != next {
			t.Fatalf("%s: %s has seq %d, want %d (seqs so far %v)", who, f.Type, s, next, seqs)
		}
		seqs = append(seqs, s)
		next++
	}
	return seqs
}

func countType(frames []relaytest.Frame, typ string) int {
	n := 0
	for _, f := range frames {
		if f.Type == typ {
			n++
		}
	}
	return n
}

func frameTexts(fs []relaytest.Frame) []string {
	var out []string
	for _, f := range fs {
		if c, ok := f.Field("content").(string); ok {
			out = append(out, c)
		}
	}
	return out
}

func healthz(t *testing.T, srv *relaytest.Server) int {
	t.Helper()
	resp, err := http.Get(srv.HTTPURL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func countIn(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}
