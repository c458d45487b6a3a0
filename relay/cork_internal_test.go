package relay

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// corkPair is a server connection accepted through a corkingWriter, as the
// relay accepts one, and a client of it (the library's, which checks
// every frame it reads).
func corkPair(t *testing.T) (*corkConn, *websocket.Conn, *websocket.Conn) {
	t.Helper()
	type accepted struct {
		cork *corkConn
		ws   *websocket.Conn
	}
	got := make(chan accepted, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		cw := &corkingWriter{ResponseWriter: w}
		ws, err := websocket.Accept(cw, req, nil)
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		ws.SetReadLimit(-1)
		got <- accepted{cw.conn, ws}
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	client.SetReadLimit(-1)
	t.Cleanup(func() { client.CloseNow() })
	a := <-got
	t.Cleanup(func() { a.ws.CloseNow() })
	return a.cork, a.ws, client
}

// The frames writeText lays out are read back by a WebSocket client as
// the same text messages, at each length encoding's bounds, corked in one
// batch or not.
func TestCorkWriteText(t *testing.T) {
	cork, _, client := corkPair(t)
	sizes := []int{0, 1, 125, 126, 127, 0xffff, 0x10000, 40 << 10, 1 << 20}
	msgs := make([][]byte, len(sizes))
	for i, n := range sizes {
		msgs[i] = bytes.Repeat([]byte{'a' + byte(i)}, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, corked := range []bool{false, true} {
		errc := make(chan error, 1)
		go func() {
			if corked {
				cork.cork()
			}
			for _, m := range msgs {
				if err := cork.writeText(m); err != nil {
					errc <- err
					return
				}
			}
			if corked {
				errc <- cork.uncork()
				return
			}
			errc <- nil
		}()
		for i, want := range msgs {
			typ, got, err := client.Read(ctx)
			if err != nil {
				t.Fatalf("corked %v, message %d (%d bytes): %v", corked, i, len(want), err)
			}
			if typ != websocket.MessageText || !bytes.Equal(got, want) {
				t.Fatalf("corked %v, message %d: %v of %d bytes, want text of %d", corked, i, typ, len(got), len(want))
			}
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

// Once the library has sent a close frame, writeText sends nothing more:
// no data frame may follow a close. The client does not answer the close
// yet, so the connection is still open when the relay tries.
func TestCorkNoFrameAfterClose(t *testing.T) {
	cork, ws, client := corkPair(t)
	if err := cork.writeText([]byte("before")); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = ws.Close(websocket.StatusNormalClosure, "bye") // waits for the client's answer
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		cork.mu.Lock()
		sent := cork.closeSent
		cork.mu.Unlock()
		if sent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the library's close frame went unnoticed")
		}
		time.Sleep(time.Millisecond)
	}
	if err := cork.writeText([]byte("after")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a frame after the close frame: %v, want net.ErrClosed", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, got, err := client.Read(ctx); err != nil || string(got) != "before" {
		t.Fatalf("first message %q, %v", got, err)
	}
	var ce websocket.CloseError
	if _, got, err := client.Read(ctx); !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure {
		t.Fatalf("after the first message: %q, %v; want the close", got, err)
	}
	<-closed
}
