package reliability

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// TestNATSRelaysShare runs three `pilotdesk serve --nats` processes on a
// real 3-node cluster (docs/scale-out.md, Several relays). A turn relay A
// runs streams to a client of relay B; A is SIGKILLed mid-stream and B's
// client gets the turn closed (idle, status error, "relay lost") about a
// lease later; relay C replays everything any client saw, gapless; the
// next send from B runs. Then the new owner is paused (SIGSTOP) past its
// lease while its turn runs: C takes the conversation over, and once the
// paused relay goes on, nothing it appends lands (the fence).
func TestNATSRelaysShare(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	const token = "nats-relays-token-5e1f"
	const lease = 4 * time.Second
	script := writeScript(t, crashScript())
	relay := func(first int) *relayProc {
		// Each relay lists the nodes from another one first.
		var urls []string
		for i := range c.Nodes {
			n := c.Nodes[(first+i)%len(c.Nodes)]
			urls = append(urls, fmt.Sprintf("nats://%s@127.0.0.1:%d", url.UserPassword(c.User, c.Password), n.ClientPort))
		}
		return startRelay(t, nil, "--agent", "script", "--script", script, "--nats", strings.Join(urls, ","),
			"--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--token", token, "--nats-lease", lease.String())
	}
	a, b, cr := relay(0), relay(1), relay(2)
	conv := uuid.NewString()

	x := newWatcher(t, "x@A", a.URL, token)
	y := newWatcher(t, "y@B", b.URL, token)
	x.subscribe(conv, -1)
	y.subscribe(conv, -1)
	x.cl.Send("copilot:send", map[string]any{"conversationId": conv, "prompt": "shared stream", "mode": "plan"})
	y.until("100 events at B", func(relaytest.Frame) bool { return y.count(conv) >= 100 })

	// B's list shows the conversation A runs, streaming.
	lb := relaytest.Dial(t, b.URL, token)
	lb.Send("copilot:list", nil)
	if l := lb.Expect("copilot:conversations"); !strings.Contains(string(l.Raw), `"conversationId":"`+conv+`"`) || !strings.Contains(string(l.Raw), `"streaming":true`) {
		t.Fatalf("B's list while A streams: %s", l.Raw)
	}

	killed := time.Now()
	a.kill()
	x.drain()
	// A takeover may be tried again for takeOverWait (relay/cluster.go):
	// a busy machine's first tries can fail (a store slow to answer, a
	// leader election), and a minute was not always enough.
	idle := y.untilWithin("the turn closed by a takeover", takeoverBound(lease), isType("copilot:idle", conv))
	took := time.Since(killed)
	t.Logf("A SIGKILLed after %d events; the turn was closed at B's client %v later (lease %v): %s", x.count(conv), took.Round(time.Millisecond), lease, idle.Raw)
	if idle.Field("status") != "error" || !strings.HasPrefix(fmt.Sprint(idle.Field("message")), "relay lost") {
		t.Fatalf("the interrupted turn was closed with %s", idle.Raw)
	}
	// About a lease, when the first try takes it over. A try that failed
	// on a busy machine (a store slow to answer, an election) is made
	// again seconds later, which takeoverBound allows for.
	retried := false
	for _, p := range []*relayProc{b, cr} {
		retried = retried || strings.Contains(p.log.String(), "taking over a conversation whose relay is gone failed; trying again")
	}
	if took > lease+10*time.Second && !retried {
		t.Errorf("the takeover took %v, with a lease of %v, and no try failed", took, lease)
	}
	last := idle.Seq()
	saw := seen(t, conv, x, y)
	checkHistory(t, cr, token, conv, last, saw, y.events[conv])

	// The next send from B runs, on whichever relay owns it now.
	y.cl.Send("copilot:send", map[string]any{"conversationId": conv, "prompt": "short", "mode": "plan"})
	if um := y.until("the next turn", isType("copilot:user_message", conv)); um.Seq() != last+1 {
		t.Fatalf("the next turn starts at seq %d, want %d", um.Seq(), last+1)
	}
	if end := y.until("the end of the next turn", isType("copilot:idle", conv)); end.Field("status") != "completed" {
		t.Fatalf("the next turn ended with %s", end.Raw)
	}

	// The owner now is B (its client watched when A's lease lapsed, or
	// sent first). Pause it mid-turn for longer than its lease: C, whose
	// client watches, takes over; B's appends after it wakes are refused.
	z := newWatcher(t, "z@C", cr.URL, token)
	z.subscribe(conv, -1)
	y.cl.Send("copilot:send", map[string]any{"conversationId": conv, "prompt": "second stream", "mode": "plan"})
	z.until("50 events of the second stream at C", func(relaytest.Frame) bool { return z.count(conv) >= 100 })
	if err := b.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	idle = z.untilWithin("the second turn closed by a takeover", takeoverBound(lease), isType("copilot:idle", conv))
	t.Logf("B paused; C's client got %s %v later", idle.Raw, time.Since(paused).Round(time.Millisecond))
	if idle.Field("status") != "error" {
		t.Fatalf("the paused relay's turn was closed with %s", idle.Raw)
	}
	if err := b.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// B goes on where it stopped: its script emits, its committer tries
	// to append; none of it may land after C's idle.
	if _, ok := b.log.WaitFor(regexp.MustCompile("another relay took this conversation over|lease lapsed"), timeout); !ok {
		t.Fatalf("B, awake again, never said it lost the conversation; log:\n%s", b.log.String())
	}
	if f, ok := z.next(2 * time.Second); ok {
		t.Fatalf("an event after the takeover's idle reached C's client: %s", f.Raw)
	}
	checkHistory(t, cr, token, conv, idle.Seq(), seen(t, conv, z), z.events[conv])
	b.stop()
	cr.stop()
}

// takeoverBound is how long a relay may take to close, by a takeover, a
// turn whose owner is gone: the owner's lease, then the tries that
// relay/cluster.go's takeOverGone makes for up to two minutes, and a
// margin for a busy machine.
func takeoverBound(lease time.Duration) time.Duration {
	return lease + 2*time.Minute + timeout
}
