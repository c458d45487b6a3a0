package reliability

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// TestNATSCrashRecovery runs `pilotdesk serve --nats` on a real 3-node
// cluster (docs/scale-out.md): while a turn streams, the NATS node leading
// the events stream is killed (the turn goes on once a new leader is
// elected), then the relay itself is SIGKILLed; a new relay process on the
// same cluster, with a new data dir (nothing of the history is local),
// resumes once the dead relay's lease lapsed: nothing a client saw is
// lost, the interrupted turn is closed (relay lost), seq carries on
// gapless, the epoch is the cluster's.
func TestNATSCrashRecovery(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	var urls []string
	for _, n := range c.Nodes {
		urls = append(urls, fmt.Sprintf("nats://%s@127.0.0.1:%d", url.UserPassword(c.User, c.Password), n.ClientPort))
	}
	const token = "nats-crash-token-1d6e0b7c"
	// The dead relay's conversations are taken over once its lease lapses.
	// The lease must outlast the leader election the test causes first
	// (4-9 s), or the relay would lose its own conversation meanwhile.
	const lease = 12 * time.Second
	args := func() []string {
		return []string{"--agent", "script", "--script", writeScript(t, crashScript()), "--nats", strings.Join(urls, ","),
			"--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--token", token, "--nats-lease", lease.String()}
	}
	stream := uuid.NewString()

	p := startRelay(t, nil, args()...)
	if strings.Contains(p.log.String(), c.Password) {
		t.Fatalf("the relay logged the NATS password:\n%s", p.log.String())
	}
	x := newWatcher(t, "x", p.URL, token)
	y := newWatcher(t, "y", p.URL, token)
	var epoch string
	for _, w := range []*watcher{x, y} {
		sub := w.subscribe(stream, -1)
		epoch, _ = sub["epoch"].(string)
	}
	x.cl.Send("copilot:send", map[string]any{"conversationId": stream, "prompt": "stream through a failover", "mode": "plan"})
	y.until("50 events of the stream", func(relaytest.Frame) bool { return y.count(stream) >= 50 })

	// Kill the stream's leader node: appends wait for the election, the
	// turn goes on.
	admin, err := c.Connect(0)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	js, _ := jetstream.New(admin)
	leader, _, err := c.StreamLeader(context.Background(), js, "PD_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	before := y.count(stream)
	killedNode := time.Now()
	c.Kill(leader)
	y.until("the stream going on after the leader's death", func(relaytest.Frame) bool { return y.count(stream) >= before+100 })
	t.Logf("NATS node %s (the stream's leader) killed at %d events; %d more arrived within %v",
		c.Nodes[leader].Name, before, y.count(stream)-before, time.Since(killedNode).Round(time.Millisecond))

	killed := time.Now()
	dead := p
	p.kill()
	x.drain()
	y.drain()
	saw := seen(t, stream, x, y)
	t.Logf("before the relay's SIGKILL the clients saw seq %d", maxSeq(saw))

	// The new relay reads the cluster as it starts, and exits on an error:
	// JetStream answers once the two live nodes have a meta leader again
	// (its election after the leader's death can outlast the stream's own
	// on a busy machine: a start read "JetStream system temporarily
	// unavailable").
	c.WaitReady(60 * time.Second)
	p = startRelay(t, nil, args()...)
	t.Logf("a new relay process on the cluster %s after the SIGKILL", time.Since(killed).Round(time.Millisecond))
	waitLeasesLapsed(t, js, dead)
	t.Logf("the dead relay's lease lapsed %s after the SIGKILL", time.Since(killed).Round(time.Millisecond))
	r := newWatcher(t, "resumer", p.URL, token)
	seq := checkResume(t, r, stream, maxSeq(saw), epoch, "plan", "")
	checkHistory(t, p, token, stream, seq, saw, r.events[stream])
	checkList(t, p, token, map[string]listEntry{stream: {title: "stream through a failover", mode: "plan"}})

	// The dead node comes back; the conversation goes on, seq gapless.
	c.Restart(leader)
	r.cl.Send("copilot:send", map[string]any{"conversationId": stream, "prompt": "short", "mode": "plan"})
	first := r.until("the next turn", isType("copilot:user_message", stream))
	if first.Seq() != seq+1 {
		t.Fatalf("the first event of the next turn has seq %d, want %d", first.Seq(), seq+1)
	}
	r.until("the end of the next turn", isType("copilot:idle", stream))
	p.stop()
}

// TestNATSEmbeddedCrashRecovery runs `pilotdesk serve --nats embedded`:
// one JetStream node in the relay's process, in --data-dir. SIGKILL
// mid-stream, restart on the same data dir: nothing a client saw is lost.
func TestNATSEmbeddedCrashRecovery(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	const token = "nats-embedded-token-83a1"
	args := []string{"--agent", "script", "--script", writeScript(t, crashScript()), "--nats", "embedded",
		"--data-dir", dataDir, "--listen", "127.0.0.1:0", "--token", token}
	stream := uuid.NewString()

	p := startRelay(t, nil, args...)
	x := newWatcher(t, "x", p.URL, token)
	epoch, _ := x.subscribe(stream, -1)["epoch"].(string)
	x.cl.Send("copilot:send", map[string]any{"conversationId": stream, "prompt": "stream until the crash"})
	x.until("100 events of the stream", func(relaytest.Frame) bool { return x.count(stream) >= 100 })
	p.kill()
	x.drain()
	saw := seen(t, stream, x)

	// A second relay on the same data dir is refused while one runs.
	p = startRelay(t, nil, args...)
	other := launchRelay(t, nil, args...)
	if code := other.exitCode(); code == 0 || !strings.Contains(other.log.String(), "in use") {
		t.Errorf("a second relay on the embedded node's data dir: exit %d, log:\n%s", code, other.log.String())
	}
	r := newWatcher(t, "resumer", p.URL, token)
	seq := checkResume(t, r, stream, maxSeq(saw), epoch, "act", "")
	checkHistory(t, p, token, stream, seq, saw, r.events[stream])
	p.stop()
}

// announcedAs matches the log lines that name a lease the relay holds: its
// announcement, and another after a renewal it lost (a leader election).
var announcedAs = regexp.MustCompile(`msg="jetstream cluster: relay announced(?: again, as another)?" relay=(\S+)`)

// waitLeasesLapsed waits until the cluster has dropped every lease the
// relay p (killed) announced, as a relay asking whether it lives sees: a
// lease ends a lease after the renewal before the kill, when the servers
// delete its key, and a wait of a lease and a second after the kill was
// as long as that with a renewal sent just before the kill, which a busy
// machine's servers delete later.
func waitLeasesLapsed(t *testing.T, js jetstream.JetStream, p *relayProc) {
	t.Helper()
	var ids []string
	for _, m := range announcedAs.FindAllStringSubmatch(p.log.String(), -1) {
		ids = append(ids, m[1])
	}
	if len(ids) == 0 {
		t.Fatalf("the relay's log names no lease it announced:\n%s", p.log.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, id := range ids {
		for {
			kv, err := js.KeyValue(ctx, "pd_relays")
			var e jetstream.KeyValueEntry
			if err == nil {
				e, err = kv.Get(ctx, id)
			}
			if errors.Is(err, jetstream.ErrKeyNotFound) || err == nil && e.Operation() != jetstream.KeyValuePut {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("the dead relay's lease %s did not lapse within %s (%v)", id, timeout, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
