package relay_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
)

// BenchmarkFanout is the hot path in one process: one conversation streams
// b.N deltas of 64 bytes to 50 subscribers over loopback WebSockets. ns/op is
// per delta; deliveries/s counts frames read by subscribers. The two-process
// figures (the relay's own CPU, RSS) come from ./tools/fanoutbench.
func BenchmarkFanout(b *testing.B) {
	const subscribers = 50
	text := strings.Repeat("x", 64)
	agent := &relaytest.FuncAgent{Turn: func(ctx context.Context, _ string, turn session.Turn, host session.Host) error {
		var n int
		fmt.Sscan(turn.Prompt, &n)
		for range n {
			host.Emit(session.Delta{MessageID: "m", Content: text})
		}
		return nil
	}}
	srv := relaytest.Start(b, relay.Config{Agent: agent, SendQueue: 1 << 20})
	conns := make([]*websocket.Conn, subscribers)
	for i := range conns {
		c, err := relaytest.DialConn(srv.URL, "")
		if err != nil {
			b.Fatal(err)
		}
		defer c.CloseNow()
		conns[i] = c
	}
	ctx := context.Background()
	for i, c := range conns {
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"copilot:subscribe","data":{"conversationId":"bench"}}`))
		if _, _, err := c.Read(ctx); err != nil {
			b.Fatalf("subscriber %d: %v", i, err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	counts := make([]int, subscribers)
	for i, c := range conns {
		wg.Go(func() {
			buf := make([]byte, 4096)
			for {
				_, r, err := c.Reader(ctx)
				if err != nil {
					return
				}
				n, _ := io.ReadFull(r, buf[:cap(buf)])
				msg := buf[:n]
				if strings.HasPrefix(string(msg), `{"type":"copilot:delta"`) {
					counts[i]++
				} else if strings.HasPrefix(string(msg), `{"type":"copilot:idle"`) {
					return
				}
			}
		})
	}
	conns[0].Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"type":"copilot:send","data":{"conversationId":"bench","prompt":"%d"}}`, b.N))
	wg.Wait()
	b.StopTimer()
	total := 0
	for _, n := range counts {
		total += n
	}
	if total != b.N*subscribers {
		b.Fatalf("%d deliveries, want %d", total, b.N*subscribers)
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "deliveries/s")
}
