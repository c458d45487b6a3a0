package client

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// BenchmarkReadFrames reads a replay's worth of delta frames (as a relay
// writes them, 150 to 900 bytes) the way serve reads them (readFrame) and
// the way it did before (Conn.Read with the connection's context), so
// that B/op says what a read costs beyond the frame it returns.
func BenchmarkReadFrames(b *testing.B) {
	const n = 1000
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = fmt.Appendf(nil, `{"type":"copilot:delta","data":{"conversationId":"c","seq":%d,"messageId":"m","content":%q}}`, i+1, strings.Repeat("word ", 20+i%150))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		for {
			// One round of frames for each ping the reader sends.
			if _, _, err := conn.Read(r.Context()); err != nil {
				return
			}
			for _, f := range frames {
				if err := conn.Write(r.Context(), websocket.MessageText, f); err != nil {
					return
				}
			}
		}
	}))
	defer srv.Close()
	for _, bm := range []struct {
		name string
		read func(ctx context.Context, conn *websocket.Conn, buf *bytes.Buffer) ([]byte, error)
	}{
		{"readFrame", func(_ context.Context, conn *websocket.Conn, buf *bytes.Buffer) ([]byte, error) {
			return readFrame(conn, buf)
		}},
		{"Conn.Read", func(ctx context.Context, conn *websocket.Conn, _ *bytes.Buffer) ([]byte, error) {
			_, f, err := conn.Read(ctx)
			return f, err
		}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.CloseNow()
			var buf bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				if err := conn.Write(ctx, websocket.MessageText, []byte("go")); err != nil {
					b.Fatal(err)
				}
				for i := range frames {
					f, err := bm.read(ctx, conn, &buf)
					if err != nil || !bytes.Equal(f, frames[i]) {
						b.Fatalf("frame %d: %v", i, err)
					}
				}
			}
		})
	}
}
