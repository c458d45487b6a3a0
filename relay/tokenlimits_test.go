package relay_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// refusedWith expects a connection refused at once: error limit whose
// message holds want, then close code 1013.
func refusedWith(t *testing.T, cl *relaytest.Client, want string) {
	t.Helper()
	f := cl.Expect("error")
	if m := dataMap(t, f); m["code"] != protocol.CodeLimit || !strings.Contains(m["message"].(string), want) {
		t.Fatalf("refused with %s, want limit saying %q", f.Raw, want)
	}
	if code, _ := cl.WaitClosed(); code != websocket.StatusTryAgainLater {
		t.Fatalf("close code %d, want 1013", code)
	}
}

// One device token holds at most MaxConnectionsPerToken connections, and
// the device tokens together never take the connections kept for the
// owner: a viewer that opens all it can leaves the owner room to connect.
func TestTokenConnectionLimit(t *testing.T) {
	parallel(t)
	e, _ := startDevices(t, func(c *relay.Config) {
		c.MaxConnections = 10
		c.MaxConnectionsPerToken = 3
		c.OwnerReserveConnections = 4
	})
	viewer := e.device("flood", protocol.RoleViewer, time.Time{})
	for range 3 {
		sync_(t, e.dialAs(viewer, ""))
	}
	refusedWith(t, e.dialAs(viewer, ""), "3 connections open")
	// Other devices have their own allowance, up to the owner's reserve.
	other := e.device("other", protocol.RoleController, time.Time{})
	for range 3 {
		sync_(t, e.dialAs(other, ""))
	}
	third := e.device("third", protocol.RoleViewer, time.Time{})
	refusedWith(t, e.dialAs(third, ""), "keeps the last 4 of its 10 for its owner")
	// The owner gets the reserve, then the relay's limit holds.
	for range 4 {
		sync_(t, e.dialAs(ownToken, ""))
	}
	refusedWith(t, e.dialAs(ownToken, ""), "limit of 10 connections")
}

// Connections refused by a limit are logged once, not once each: 30 of
// them make one WARN line (tools/flood's 10,000 made 9,936).
func TestRefusedConnectionsLoggedOnce(t *testing.T) {
	parallel(t)
	e, _ := startDevices(t, func(c *relay.Config) { c.MaxConnectionsPerToken = 1 })
	viewer := e.device("flood", protocol.RoleViewer, time.Time{})
	sync_(t, e.dialAs(viewer, ""))
	for range 30 {
		refusedWith(t, e.dialAs(viewer, ""), "1 connections open")
	}
	if n := strings.Count(e.logs.all(), "a connection limit is reached"); n != 1 {
		t.Fatalf("%d log lines for 30 refused connections, want 1", n)
	}
}

// waitPending waits for the relay to count at least n bytes of frames being
// received.
func waitPending(t *testing.T, e *env, n int64) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for e.srv.Relay.PendingFrameBytes() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the relay holds %d bytes of frames being received, want %d", e.srv.Relay.PendingFrameBytes(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Half-sent frames of device tokens hold at most MaxPendingFrameBytesPerToken
// each, and all of them no more than the budget less the owner's reserve:
// viewers holding large frames they never finish leave the owner's large
// prompts their room.
func TestTokenFrameBudget(t *testing.T) {
	parallel(t)
	const mib = 1 << 20
	e, _ := startDevices(t, func(c *relay.Config) {
		c.MaxPendingFrameBytes = 4 * mib
		c.MaxPendingFrameBytesPerToken = mib + mib/2
		c.OwnerReserveFrameBytes = 2 * mib
	})
	frame := func(size int) []byte {
		return append([]byte(`{"type":"ping"}`), bytes.Repeat([]byte(" "), size-len(`{"type":"ping"}`))...)
	}
	refusal := func(cl *relaytest.Client, size int, want string) {
		t.Helper()
		cl.SendRaw(frame(size))
		f := cl.Expect("error")
		if m := dataMap(t, f); m["code"] != protocol.CodeLimit || !strings.Contains(m["message"].(string), want) {
			t.Fatalf("a frame over the budget: %s, want limit saying %q", f.Raw, want)
		}
	}
	// One viewer holds a 900 KiB frame (1 MiB of buffer, 1,008 KiB of the
	// budget); another connection of its token is refused a 600 KiB one
	// (another 1,008 KiB).
	viewer := e.device("viewer", protocol.RoleViewer, time.Time{})
	finish1 := unfinishedFrame(t, e.dialAs(viewer, ""), 900<<10)
	waitPending(t, e, mib-16<<10)
	refusal(e.dialAs(viewer, ""), 600<<10, "1.5 MiB from one device token")
	// Another device holds as much: the devices now have the budget less
	// the owner's reserve, and a third is refused.
	finish2 := unfinishedFrame(t, e.dialAs(e.device("second", protocol.RoleViewer, time.Time{}), ""), 900<<10)
	waitPending(t, e, 2*(mib-16<<10))
	refusal(e.dialAs(e.device("third", protocol.RoleViewer, time.Time{}), ""), 200<<10, "2 MiB in all")
	// The owner's large frames still go through.
	owner := e.dialAs(ownToken, "")
	for range 3 {
		owner.SendRaw(frame(900 << 10))
		owner.Expect("pong")
	}
	finish1()
	finish2()
	waitPending(t, e, 0)
}

// Each token creates at most MaxNewConversations conversations a minute,
// however many connections it opens; another token has its own allowance.
func TestNewConversationsPerToken(t *testing.T) {
	parallel(t)
	e, _ := startDevices(t, func(c *relay.Config) { c.MaxNewConversations = 2 })
	for i := range 2 {
		cl := e.dialAs(ownToken, "")
		cl.Send("copilot:set_mode", map[string]any{"conversationId": fmt.Sprint("own", i), "mode": "plan"})
		cl.Send("ping", nil)
		cl.Expect("pong") // and no error before it
	}
	cl := e.dialAs(ownToken, "")
	cl.Send("copilot:set_mode", map[string]any{"conversationId": "own2", "mode": "plan"})
	if f := cl.Expect("error"); dataMap(t, f)["code"] != protocol.CodeLimit || !strings.Contains(dataMap(t, f)["message"].(string), "this token has created 2 conversations") {
		t.Fatalf("a third new conversation of the token from a third connection: %s", f.Raw)
	}
	dev := e.dialAs(e.device("laptop", protocol.RoleController, time.Time{}), "")
	dev.Send("copilot:set_mode", map[string]any{"conversationId": "dev0", "mode": "plan"})
	dev.Send("ping", nil)
	dev.Expect("pong")
}

// An address holds at most MaxConnectionsPerAddress HTTP connections that
// are not an open WebSocket: 60 idle connections from 127.0.0.1 leave 5
// held (the oldest closed), and the owner, from the same address, still
// connects and is answered.
func TestAddressConnectionLimit(t *testing.T) {
	parallel(t)
	e, _ := startDevices(t, func(c *relay.Config) { c.MaxConnectionsPerAddress = 5 })
	addr := strings.TrimPrefix(e.srv.HTTPURL, "http://")
	var idle []net.Conn
	for range 60 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	// The first is closed by the relay: its read ends.
	_ = idle[0].SetReadDeadline(time.Now().Add(wait))
	if _, err := idle[0].Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the oldest idle connection of 60 was not closed: %v", err)
	}
	owner := e.dialAs(ownToken, "")
	owner.Send("ping", nil)
	owner.Expect("pong")
	if n := e.srv.Relay.AddressConns(); n > 5 {
		t.Fatalf("the relay holds %d idle connections of 127.0.0.1, over the limit of 5", n)
	}
	// An open WebSocket does not count: more of them than the limit.
	for range 6 {
		sync_(t, e.dialAs(ownToken, ""))
	}
}

// Connections that are no WebSocket are bounded over all addresses too:
// from 30 loopback addresses, two each (under the limit per address), the
// oldest is closed past MaxConnectionsNotWebSocket, and the owner gets in.
// Before, 400 addresses holding 50 each used the relay's 20,000 file
// descriptors and the owner waited 22 s (tools/flood -addrs 400).
func TestAllAddressesConnectionLimit(t *testing.T) {
	parallel(t)
	e, _ := startDevices(t, func(c *relay.Config) { c.MaxConnectionsPerAddress = 5; c.MaxConnectionsNotWebSocket = 20 })
	addr := strings.TrimPrefix(e.srv.HTTPURL, "http://")
	var idle []net.Conn
	for i := range 60 {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%30))}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Skipf("cannot connect from 127.0.0.%d (a system without all of 127.0.0.0/8 on loopback): %v", 2+i%30, err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	_ = idle[0].SetReadDeadline(time.Now().Add(wait))
	if _, err := idle[0].Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the oldest of 60 idle connections from 30 addresses was not closed: %v", err)
	}
	owner := e.dialAs(ownToken, "")
	owner.Send("ping", nil)
	owner.Expect("pong")
	if n := e.srv.Relay.AllAddressConns(); n > 20 {
		t.Fatalf("the relay holds %d connections that are no WebSocket, over the limit of 20", n)
	}
}

// Wrong tokens from one address are throttled: past AuthFailuresAllowed,
// its upgrades get 429 with Retry-After, even with the right token (it is
// not looked at); the log says so once, with the address and the count,
// never a token.
func TestAuthThrottle(t *testing.T) {
	parallel(t)
	e, _ := startDevices(t, func(c *relay.Config) { c.AuthFailuresAllowed = 3 })
	status := func(token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", e.srv.HTTPURL+"/ws", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	for i := range 4 {
		if code, _ := status(fmt.Sprintf("wrong-guess-%d", i)); code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i, code)
		}
	}
	code, after := status(ownToken)
	if code != http.StatusTooManyRequests || after != "1" {
		t.Fatalf("the right token from a throttled address: %d Retry-After %q, want 429 and 1", code, after)
	}
	line := e.logs.waitLog(t, "throttling")
	if !strings.Contains(line, "127.0.0.1") || !strings.Contains(line, "failures=4") {
		t.Errorf("the throttle's log line: %s", line)
	}
	if all := e.logs.all(); strings.Contains(all, "wrong-guess") || strings.Contains(all, ownToken) {
		t.Errorf("the log holds a token:\n%s", all)
	}
}

// A connection makes at most MaxReplaysPerMinute subscribes that replay
// stored events; one more gets limit. A subscribe with nothing to
// replay (from the last seq, or without sinceSeq) is not counted.
func TestReplayLimit(t *testing.T) {
	parallel(t)
	e := start(t, func(c *relay.Config) { c.MaxReplaysPerMinute = 3 })
	cl := e.dial()
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "r"})
	cl.Expect("copilot:subscribed")
	cl.Send("copilot:set_mode", map[string]any{"conversationId": "r", "mode": "plan"})
	last := cl.WaitFor("copilot:mode_changed", nil).Seq() // sent once stored
	if last < 1 {
		t.Fatalf("the conversation has no event (seq %d)", last)
	}
	for range 3 {
		cl.Send("copilot:subscribe", map[string]any{"conversationId": "r", "sinceSeq": 0})
		cl.WaitFor("copilot:subscribed", nil)
	}
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "r", "sinceSeq": 0})
	f := cl.Expect("error")
	if m := dataMap(t, f); m["code"] != protocol.CodeLimit || m["conversationId"] != "r" || !strings.Contains(m["message"].(string), "3 replays") {
		t.Fatalf("a fourth replay in a minute: %s", f.Raw)
	}
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "r", "sinceSeq": last})
	cl.Expect("copilot:subscribed")
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "r"})
	cl.Expect("copilot:subscribed")
	// Another connection has its own allowance.
	other := e.dial()
	other.Send("copilot:subscribe", map[string]any{"conversationId": "r", "sinceSeq": 0})
	other.WaitFor("copilot:subscribed", nil)
}
