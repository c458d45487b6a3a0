package relay_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
	"github.com/pilotdesk/pilotdesk/relay/history/memcluster"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// Several relays sharing conversations (docs/scale-out.md): two or three
// relays in this process, each with its own store and cluster membership,
// driven over real WebSockets. The tests of the relays' logic run on the
// in-memory cluster (relay/history/memcluster, no NATS) and on one
// in-process NATS node; those of what NATS does (a node dies, an ack is
// lost, the watches of the spend and the devices, an older relay's lease)
// on NATS alone, some also on a real 3-node nats-server cluster
// (natstest). relay/history/clustertest checks that the in-memory cluster
// and the JetStream one keep the same contract.

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

// A subscriber on relay B gets every event of a turn relay A runs, with
// A's seqs, none twice; a late subscriber on B replays and joins live;
// B's list shows the conversation.
func TestClusterFanOut(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		_, bb, ca, cb, id := b.pairWith(t, "fan", shareLease)

		cb.Send("copilot:list", map[string]any{"watch": true})
		cb.Expect("copilot:conversations")
		subscribe(cb, id)
		if sub := cb.WaitFor("copilot:subscribed", nil); sub.Seq() != 0 {
			t.Fatalf("subscribed to a new conversation at seq %d", sub.Seq())
		}

		send(ca, id, "stream please")
		gotA := collect(t, ca, "copilot:idle", nil)
		seqA := eventSeqs(t, "A", gotA, 0)

		var gotB, listed []relaytest.Frame
		for {
			f := cb.Next()
			if f.Type == "copilot:conversation" {
				listed = append(listed, f) // the watched list, below
				continue
			}
			gotB = append(gotB, f)
			if f.Type == "copilot:idle" {
				break
			}
		}
		seqB := eventSeqs(t, "B", gotB, 0)
		if fmt.Sprint(seqA) != fmt.Sprint(seqB) {
			t.Fatalf("A saw seqs %v, B %v", seqA, seqB)
		}
		if n := countType(gotB, "copilot:delta"); n != 40 {
			t.Fatalf("B got %d deltas, want 40", n)
		}
		// The same bytes: B sends what A stored.
		rawA := map[int64]string{}
		for _, f := range gotA {
			rawA[f.Seq()] = string(f.Raw)
		}
		for _, f := range gotB {
			if f.Type != "copilot:subscribed" && rawA[f.Seq()] != string(f.Raw) {
				t.Fatalf("seq %d: A sent %s, B %s", f.Seq(), rawA[f.Seq()], f.Raw)
			}
		}
		if idle := gotB[len(gotB)-1]; idle.Field("status") != "completed" {
			t.Fatalf("B's idle %s", idle.Raw)
		}

		// A late subscriber on B, from seq 3: the rest, then subscribed.
		late := bb.srv.Dial(t)
		replayFrom(late, id, 3)
		gotLate := collect(t, late, "copilot:subscribed", nil)
		eventSeqs(t, "late", gotLate, 3)
		if sub := gotLate[len(gotLate)-1]; sub.Seq() != seqA[len(seqA)-1] || sub.Field("streaming") != false {
			t.Fatalf("late subscribed %s, want seq %d not streaming", sub.Raw, seqA[len(seqA)-1])
		}

		// B's watched list heard of it: streaming, then not.
		for !strings.Contains(string(listed[len(listed)-1].Raw), `"streaming":false`) {
			listed = append(listed, cb.WaitFor("copilot:conversation", nil))
		}
		if !strings.Contains(string(listed[0].Raw), `"streaming":true`) || !strings.Contains(string(listed[0].Raw), id) {
			t.Fatalf("B's watched list: first %s", listed[0].Raw)
		}

		// B's list shows it, as A's does.
		cb.Send("copilot:list", nil)
		list := cb.WaitFor("copilot:conversations", nil)
		if !strings.Contains(string(list.Raw), `"conversationId":"`+id+`"`) || !strings.Contains(string(list.Raw), `"title":"stream please"`) {
			t.Fatalf("B's list %s", list.Raw)
		}

		// A second turn from B runs at A, the owner: same conversation, seqs
		// go on.
		send(cb, id, "again")
		gotB2 := collect(t, cb, "copilot:idle", nil)
		var b2 []relaytest.Frame
		for _, f := range gotB2 {
			if f.Type != "copilot:conversation" {
				b2 = append(b2, f)
			}
		}
		eventSeqs(t, "B, second turn", b2, seqA[len(seqA)-1])
		gotA2 := collect(t, ca, "copilot:idle", nil)
		eventSeqs(t, "A, second turn", gotA2, seqA[len(seqA)-1])
		if um := gotA2[0]; um.Type != "copilot:user_message" || um.Field("content") != "again" {
			t.Fatalf("A got %s first", um.Raw)
		}
		// A ran the agent: its log says nothing of taking anything over.
		if strings.Contains(bb.logs.all(), "took a conversation over") {
			t.Fatal("B took over a conversation whose owner is alive")
		}

		// A delete from B: A deletes it, both relays' subscribers hear it.
		cb.Send("copilot:delete", map[string]any{"conversationId": id})
		if d := ca.WaitFor("copilot:deleted", nil); d.Field("conversationId") != id {
			t.Fatalf("A got %s", d.Raw)
		}
		cb.WaitFor("copilot:deleted", nil)
		// The id starts anew, from seq 1, whoever sends first.
		send(cb, id, "anew")
		um := cb.WaitFor("copilot:user_message", nil)
		if um.Seq() != 1 {
			t.Fatalf("the new conversation's first event: %s", um.Raw)
		}
		cb.WaitFor("copilot:idle", nil)
	})
}

// A question raised at A, answered from B: the agent gets the answer,
// A's clients get user_input_closed with who answered. A set_mode from B
// decides A's next permission.
func TestClusterQuestionAndModeFromAnotherRelay(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		_, _, ca, cb, id := b.pairWith(t, "q", shareLease)

		send(ca, id, "question")
		reqA := ca.WaitFor("copilot:user_input_request", nil)
		replayFrom(cb, id, 0)
		sub := cb.WaitFor("copilot:subscribed", nil)
		pending, _ := sub.Field("pendingInput").(map[string]any)
		if sub.Field("streaming") != true || pending == nil || pending["requestId"] != reqA.Field("requestId") {
			t.Fatalf("B's subscribed %s, want streaming with the open question", sub.Raw)
		}
		// An invalid answer from B gets A's error back.
		cb.Send("copilot:user_input_response", map[string]any{"conversationId": id, "requestId": reqA.Field("requestId"), "answer": "middle"})
		if e := cb.WaitFor("error", nil); e.Field("code") != "invalid_answer" {
			t.Fatalf("B got %s", e.Raw)
		}
		cb.Send("copilot:user_input_response", map[string]any{"conversationId": id, "requestId": reqA.Field("requestId"), "answer": "right"})
		closed := ca.WaitFor("copilot:user_input_closed", nil)
		if closed.Field("reason") != "answered" || closed.Field("requestId") != reqA.Field("requestId") {
			t.Fatalf("A got %s", closed.Raw)
		}
		gotA := collect(t, ca, "copilot:idle", nil)
		if !strings.Contains(fmt.Sprint(frameTexts(gotA)), "You said right.") {
			t.Fatalf("the agent did not get B's answer: %s", framesString(gotA))
		}
		cb.WaitFor("copilot:user_input_closed", nil)
		cb.WaitFor("copilot:idle", nil)

		// set_mode from B, while A's turn waits on a question: the tool
		// call after it is denied at A.
		ca.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "mode check", "mode": "act"})
		req := ca.WaitFor("copilot:user_input_request", nil)
		cb.Send("copilot:set_mode", map[string]any{"conversationId": id, "mode": "plan"})
		if mc := ca.WaitFor("copilot:mode_changed", nil); mc.Field("mode") != "plan" {
			t.Fatalf("A got %s", mc.Raw)
		}
		cb.Send("copilot:user_input_response", map[string]any{"conversationId": id, "requestId": req.Field("requestId"), "answer": "yes"})
		end := ca.WaitFor("copilot:tool_end", nil)
		if end.Field("denied") != true {
			t.Fatalf("the tool ran in plan mode: %s", end.Raw)
		}
		ca.WaitFor("copilot:idle", nil)
		if endB := cb.WaitFor("copilot:tool_end", nil); endB.Field("denied") != true {
			t.Fatalf("B got %s", endB.Raw)
		}
		// An abort from B of a conversation that is not streaming: A's
		// error, through B.
		cb.WaitFor("copilot:idle", nil)
		cb.Send("copilot:abort", map[string]any{"conversationId": id})
		if e := cb.WaitFor("error", nil); e.Field("code") != "not_streaming" {
			t.Fatalf("B got %s", e.Raw)
		}
		// A turn sent from B and aborted from B: it runs and stops at A.
		send(cb, id, "long")
		ca.WaitFor("copilot:delta", nil)
		cb.WaitFor("copilot:delta", nil)
		cb.Send("copilot:abort", map[string]any{"conversationId": id})
		wantIdle(t, ca, "A", "aborted")
		wantIdle(t, cb, "B", "aborted")
	})
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

func countIn(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
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

// A conversation deleted without the relays being told (here: straight
// from the store, as when a relay misses the notice while its connection
// is down) is forgotten by the next subscribe: the subscriber finds a new,
// empty conversation, and the watched list drops the old one.
func TestClusterDeletedUnseen(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		a, bb, ca, cb, id := b.pair(t, "unseen")

		send(ca, id, "hello")
		ca.WaitFor("copilot:idle", nil)
		cb.Send("copilot:list", map[string]any{"watch": true})
		if l := cb.WaitFor("copilot:conversations", nil); !strings.Contains(string(l.Raw), id) {
			// The list may lag A's last event by a moment.
			cb.WaitFor("copilot:conversation", func(f relaytest.Frame) bool { return strings.Contains(string(f.Raw), id) })
		}

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.store.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		late := bb.srv.Dial(t)
		replayFrom(late, id, 0)
		if sub := late.WaitFor("copilot:subscribed", nil); sub.Seq() != 0 {
			t.Fatalf("subscribed to a deleted conversation: %s", sub.Raw)
		}
		gone := cb.WaitFor("copilot:conversation", func(f relaytest.Frame) bool {
			return strings.Contains(string(f.Raw), id) && strings.Contains(string(f.Raw), `"deleted":true`)
		})
		t.Logf("the watched list: %s", gone.Raw)
	})
}

// An append of relay A's is stored, but its ack is lost (as when the
// cluster loses its quorum with the append stored): the Write fails with
// the outcome unsure, and B's client may already have the events the stream
// republished. Nothing is deleted and no seq is handed out again: A takes
// the stream's history (its own client gets the stored events, gapless),
// takes the conversation back (no other relay owns it) and closes the turn
// with an idle saying the history store could not be reached, not "relay
// lost"; every client and the stored chain agree, seq by seq, and the
// next send runs. Before, A deleted the stored append ("took back") after
// B's client had its events, and stored other events under their seqs.
func TestClusterUnsureAppendKept(t *testing.T) {
	parallel(t)
	checkNoLeaks(t)
	b := embeddedBackend(t)
	s := clusterScript(t)
	const id = "unsure-append"
	var arm atomic.Bool
	ba := b
	ba.loseAck = func(conv string) bool { return conv == id && arm.CompareAndSwap(true, false) }
	a := ba.relay(t, 0, s)
	bb := b.relay(t, 1, s)
	ca, cb := a.srv.Dial(t), bb.srv.Dial(t)

	send(ca, id, "long")
	ca.WaitFor("copilot:delta", func(f relaytest.Frame) bool { return f.Field("content") == "l2 " })
	replayFrom(cb, id, 0)
	cb.WaitFor("copilot:subscribed", nil)
	arm.Store(true)

	idleA := ca.WaitFor("copilot:idle", nil)
	idleB := cb.WaitFor("copilot:idle", nil)
	for who, idle := range map[string]relaytest.Frame{"A's client": idleA, "B's client": idleB} {
		if idle.Field("status") != "error" || strings.HasPrefix(fmt.Sprint(idle.Field("message")), "relay lost") || idle.Seq() != idleA.Seq() {
			t.Fatalf("%s got %s (A's %s)", who, idle.Raw, idleA.Raw)
		}
	}
	a.logs.waitLog(t, "was stored after all")

	// The stored chain: gapless, one idle, last.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stored := map[int64]string{}
	var types []string
	if err := bb.store.Events(ctx, id, 0, func(e history.Event) error {
		if e.Seq != int64(len(types)+1) {
			t.Fatalf("stored seq %d after %d", e.Seq, len(types))
		}
		stored[e.Seq] = string(e.Frame)
		types = append(types, e.Type)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if types[len(types)-1] != "copilot:idle" || countIn(types, "copilot:idle") != 1 || int64(len(types)) != idleA.Seq() {
		t.Fatalf("stored %v, the idle at %d", types, idleA.Seq())
	}
	// A third client replays from A: every stored event, the same bytes.
	cc := a.srv.Dial(t)
	replayFrom(cc, id, 0)
	got := collect(t, cc, "copilot:subscribed", nil)
	seqs := eventSeqs(t, "the replay from A", got, 0)
	if int64(len(seqs)) != idleA.Seq() {
		t.Fatalf("the replay from A gave seqs %v, want 1…%d", seqs, idleA.Seq())
	}
	for _, f := range got {
		if s := f.Seq(); s > 0 && f.Type != "copilot:subscribed" && stored[s] != string(f.Raw) {
			t.Fatalf("seq %d replays as %s, stored as %s", s, f.Raw, stored[s])
		}
	}
	// The next send runs, after the stored seqs.
	send(cb, id, "hello")
	next := wantIdle(t, cb, "B's client", "completed")
	if next.Seq() <= idleA.Seq() {
		t.Fatalf("the next turn's idle at seq %d, not after %d", next.Seq(), idleA.Seq())
	}
}
