//go:build unix

package reliability

import (
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// TestConnectionFlood opens 10,100 connections to `serve` (its limit is
// 10,000): the 100 over it get error limit and 1013, the others stay open
// and answer a ping. It needs an open-file limit of more than 10,100 (it
// raises the soft limit to the hard one) and some 700 MB for the relay and
// the clients, so it runs only with PILOTDESK_FLOOD=1.
func TestConnectionFlood(t *testing.T) {
	if os.Getenv("PILOTDESK_FLOOD") != "1" {
		t.Skip("set PILOTDESK_FLOOD=1 to open 10,100 connections")
	}
	const token = "flood-token-1123"
	const n, limit = 10100, relay.DefaultMaxConnections
	// This process and the relay (which inherits it) each hold n sockets.
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Max < n+200 {
		t.Skipf("the open-file limit (%d) is too low for %d connections", rl.Max, n)
	}
	if rl.Cur < n+200 {
		old := rl.Cur
		rl.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			t.Skipf("cannot raise the open-file limit: %v", err)
		}
		t.Cleanup(func() {
			rl.Cur = old
			_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
		})
	}
	p := startRelay(t, nil, "--agent", "script", "--data-dir", ":memory:", "--listen", "127.0.0.1:0", "--token", token)
	ctx, cancel := context.WithTimeout(context.Background(), 5*timeout)
	defer cancel()
	// Each connection's reader reports its first frame: the limit error
	// for one over the limit, else the pong of the ping sent once all are
	// open.
	type result struct {
		first string
		code  websocket.StatusCode
	}
	results := make(chan result, n)
	var mu sync.Mutex
	var conns []*websocket.Conn
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
	}()
	var failed atomic.Int32
	sem := make(chan struct{}, 50)
	var wg sync.WaitGroup
	for range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := relaytest.DialConn(p.URL, token)
			if err != nil {
				failed.Add(1)
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				_, data, err := c.Read(ctx)
				r := result{first: string(data)}
				if err == nil && strings.Contains(r.first, `"code":"limit"`) {
					r.code = closeCode(ctx, c)
				}
				results <- r
			}()
		}()
	}
	wg.Wait()
	rss, hwm := procMem(t, p.cmd.Process.Pid)
	mu.Lock()
	for _, c := range conns {
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"type":"ping"}`)) // a refused one is closing: the write may fail
	}
	mu.Unlock()
	refused, pongs := 0, 0
	for range n - int(failed.Load()) {
		r := <-results
		switch {
		case strings.Contains(r.first, `"code":"limit"`) && r.code == websocket.StatusTryAgainLater:
			refused++
		case strings.Contains(r.first, `"pong"`):
			pongs++
		default:
			t.Errorf("a connection got %.200q (close %d)", r.first, r.code)
		}
	}
	t.Logf("%d connections: %d answered a ping, %d refused with limit and 1013, %d failed to connect; relay RSS %s (peak %s)", n, pongs, refused, failed.Load(), mib(rss), mib(hwm))
	if refused != n-limit || pongs != limit || failed.Load() != 0 {
		t.Errorf("%d answered, %d refused, %d failed; want %d and %d", pongs, refused, failed.Load(), limit, n-limit)
	}
}
