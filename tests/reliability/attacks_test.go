package reliability

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// The attacks of docs/reliability.md (Attacks tried) that the relay
// already withstood before issue #18, made repeatable against the real
// binary. Every loop is bounded and every connection goes to 127.0.0.1.

// closeCode reads from conn until it ends and returns the close code the
// relay sent (-1 when it ended without one).
func closeCode(ctx context.Context, conn *websocket.Conn) websocket.StatusCode {
	for {
		if _, _, err := conn.Read(ctx); err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code
			}
			return -1
		}
	}
}

// TestSlowloris: 300 connections send the start of an HTTP request and
// then a header line every 2 s, never finishing. The relay's server gives a
// request's headers 10 s (ReadHeaderTimeout), so it drops them all then;
// meanwhile a real client connects and works.
func TestSlowloris(t *testing.T) {
	t.Parallel()
	const token = "slowloris-token-1732"
	const n = 300
	p := startRelay(t, nil, "--agent", "script", "--data-dir", ":memory:", "--listen", "127.0.0.1:0", "--token", token)
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	start := time.Now()
	for range n {
		c, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n", p.Addr); err != nil {
			t.Fatal(err)
		}
	}
	// Trickle a header now and then from all of them until the relay hangs up.
	var closed atomic.Int32
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			go func() {
				for i := 0; i < 20; i++ {
					time.Sleep(2 * time.Second)
					if _, err := fmt.Fprintf(c, "X-Slow-%d: still here\r\n", i); err != nil {
						return
					}
				}
			}()
			_ = c.SetReadDeadline(time.Now().Add(timeout))
			if _, err := io.ReadAll(c); err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
				closed.Add(1) // EOF or a reset: the relay hung up
			}
		}()
	}
	cl := relaytest.Dial(t, p.URL, token)
	expectPong(t, cl, fmt.Sprintf("%d slow requests", n))
	wg.Wait()
	took := time.Since(start)
	t.Logf("the relay hung up on %d of %d slow requests within %s; a real client worked meanwhile", closed.Load(), n, took.Round(100*time.Millisecond))
	if closed.Load() != n {
		t.Errorf("%d of %d slow requests are still open after %s", n-int(closed.Load()), n, took)
	}
	if took > 30*time.Second {
		t.Errorf("the relay took %s to drop requests that never finish their headers", took)
	}
	expectPong(t, cl, "after the slow requests")
}

// TestPingFlood: a connection sends 600,000 pings as fast as it can and
// never reads. The pongs fill the socket's buffers, then its
// send queue (4,096 frames), and the relay closes it with 4000 (too far
// behind) instead of buffering without end; meanwhile another connection
// works and the relay's memory stays bounded. One that reads gets a pong
// for each of its 20,000 pings.
func TestPingFlood(t *testing.T) {
	t.Parallel()
	const token = "ping-flood-token-1618"
	p := startRelay(t, nil, "--agent", "script", "--data-dir", ":memory:", "--listen", "127.0.0.1:0", "--token", token)
	before := settle(t, p, 1<<30, "at start")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	flood := dialSmallBuffer(t, p.URL, token)
	defer flood.CloseNow()
	other := relaytest.Dial(t, p.URL, token)
	ping := []byte(`{"type":"ping"}`)
	sent := 0
	// The relay's socket holds at most 4 MiB (tcp_wmem) and this one's
	// 64 KiB: some 250,000 pongs, then 4,096 in the queue.
	for ; sent < 600000; sent++ {
		if err := flood.Write(ctx, websocket.MessageText, ping); err != nil {
			break
		}
		if sent%200000 == 0 {
			expectPong(t, other, fmt.Sprintf("%d pings of a flood", sent))
		}
	}
	rss, _ := procMem(t, p.cmd.Process.Pid)
	// The close code waits behind every pong already in the socket: read
	// them with time of its own, not what the flood left of ctx (on a
	// loaded machine the flood alone can take most of it).
	readCtx, cancelRead := context.WithTimeout(context.Background(), timeout)
	defer cancelRead()
	code := closeCode(readCtx, flood)
	t.Logf("the flooding connection sent %d pings without reading and was closed with %d; relay RSS %s at start, %s after the flood", sent, code, mib(before), mib(rss))
	// 4000 when the close frame could still be written; when even that
	// could not get through the full socket, the relay drops the
	// connection (its close watchdog), which the client sees as an end
	// without a code. Either way the flooder is gone; still open is not.
	if code != relay.CloseTooSlow && (code != -1 || readCtx.Err() != nil) {
		t.Errorf("closed with %d, want %d (too far behind) or dropped", code, relay.CloseTooSlow)
	}
	if rss > before+128<<20 {
		t.Errorf("the flood took the relay from %s to %s", mib(before), mib(rss))
	}

	reader := relaytest.Dial(t, p.URL, token)
	const n = 20000
	go func() {
		for range n {
			reader.Send("ping", nil)
		}
	}()
	for i := range n {
		if f := reader.Next(); f.Type != "pong" {
			t.Fatalf("ping %d got %s", i, f.Raw)
		}
	}
}

// dialSmallBuffer connects with a 64 KiB socket receive buffer (no
// autotuning), so that what the relay sends and the client does not read
// backs up into the relay soon.
func dialSmallBuffer(t *testing.T, wsURL, token string) *websocket.Conn {
	t.Helper()
	dialer := &net.Dialer{}
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(64 << 10)
		}
		return c, err
	}}
	t.Cleanup(transport.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{
		HTTPClient: &http.Client{Transport: transport},
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(-1)
	return c
}

// fellBehind is the relay's log line when it gives up on a connection
// whose send queue overflowed.
var fellBehind = regexp.MustCompile(`a connection fell too far behind; disconnecting it`)

// TestSlowReaderReal: while a conversation streams 8,000 deltas of 2 KiB,
// one subscriber never reads. The relay never waits for it: once the
// sockets' buffers and its send queue (4,096 frames) are full it is closed
// with 4000, while a subscriber that reads gets every event, in order, and
// the turn ends.
func TestSlowReaderReal(t *testing.T) {
	t.Parallel()
	const token = "slow-reader-token-5772"
	var steps []any
	for i := range 8000 {
		steps = append(steps, map[string]any{"delta": fmt.Sprintf("%04d %s\n", i, strings.Repeat("w", 2<<10-6))})
		if i%10 == 9 {
			steps = append(steps, map[string]any{"sleep": "1ms"}) // a pace a test client can read at
		}
	}
	script := writeScript(t, map[string]any{"turns": []any{map[string]any{"steps": steps}}})
	p := startRelay(t, nil, "--agent", "script", "--script", script, "--data-dir", ":memory:", "--listen", "127.0.0.1:0", "--token", token)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	id := uuid.NewString()
	slow := dialSmallBuffer(t, p.URL, token)
	defer slow.CloseNow()
	if err := slow.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"type":"copilot:subscribe","data":{"conversationId":%q}}`, id)); err != nil {
		t.Fatal(err)
	}
	// The stalled subscriber reads from the moment the relay gives up on
	// it: what was sent before its close frame waits in the sockets, and
	// the relay drops a peer that reads none of it within closeGrace (15
	// s). Reading only once the turn ended made the close depend on the
	// stream's pace: on a busy machine the rest of the turn took longer
	// than that, and the close was never read (-1).
	closed := make(chan websocket.StatusCode, 1)
	go func() {
		if _, ok := p.log.WaitFor(fellBehind, timeout); !ok {
			closed <- -2
			return
		}
		readCtx, cancelRead := context.WithTimeout(context.Background(), timeout)
		defer cancelRead()
		closed <- closeCode(readCtx, slow)
	}()
	fast := relaytest.Dial(t, p.URL, token)
	fast.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "stream"})
	var last int64
	for {
		f := fast.Next()
		if s := f.Seq(); s > 0 {
			if s != last+1 {
				t.Fatalf("the reading subscriber got seq %d after %d", s, last)
			}
			last = s
		}
		if f.Type == "copilot:idle" {
			break
		}
	}
	code := <-closed
	if code == -2 {
		t.Fatal("the relay never said it gave up on the subscriber that does not read")
	}
	t.Logf("the reading subscriber got all %d events; the one that did not read was closed with %d", last, code)
	if code != relay.CloseTooSlow {
		t.Errorf("the subscriber that does not read was closed with %d, want %d", code, relay.CloseTooSlow)
	}
}
