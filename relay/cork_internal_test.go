package relay

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
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

// single is a batch of one frame queued alone (conn.enqueue).
func single(p []byte) []outRun { return []outRun{{one: p, bytes: len(p)}} }

// The frames writeRuns lays out are read back by a WebSocket client as the
// same text messages, in order, at each length encoding's bounds and past
// the buffer's size, whether each is a batch of its own, all are one run,
// or the batch mixes runs and frames queued alone.
func TestCorkWriteRuns(t *testing.T) {
	cork, _, client := corkPair(t)
	sizes := []int{0, 1, 125, 126, 127, 0xffff, 0x10000, 40 << 10, 1 << 20, 3}
	msgs := make([][]byte, len(sizes))
	for i, n := range sizes {
		msgs[i] = bytes.Repeat([]byte{'a' + byte(i)}, n)
	}
	batches := map[string][][]outRun{"alone": nil, "one run": {{newRun(msgs)}}}
	for _, m := range msgs {
		batches["alone"] = append(batches["alone"], single(m))
	}
	mixed := []outRun{newRun(msgs[:3]), {one: msgs[3], bytes: len(msgs[3])}, newRun(msgs[4:8])}
	for _, m := range msgs[8:] {
		mixed = append(mixed, single(m)...)
	}
	batches["mixed"] = [][]outRun{mixed}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for name, batch := range batches {
		errc := make(chan error, 1)
		go func() {
			for _, runs := range batch {
				if err := cork.writeRuns(runs); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
		for i, want := range msgs {
			typ, got, err := client.Read(ctx)
			if err != nil {
				t.Fatalf("%s, message %d (%d bytes): %v", name, i, len(want), err)
			}
			if typ != websocket.MessageText || !bytes.Equal(got, want) {
				t.Fatalf("%s, message %d: %v of %d bytes, want text of %d", name, i, typ, len(got), len(want))
			}
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

// countingConn is a net.Conn that keeps what is written to it and counts
// the Writes (the syscalls a socket would make).
type countingConn struct {
	net.Conn // nil: only Write is called
	writes   []int
	out      bytes.Buffer
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, len(p))
	return c.out.Write(p)
}

// A batch leaves in as few Writes as its buffer allows: one for a batch
// that fits in corkBufferSize; a larger one (a connection behind) in
// Writes of up to corkBigBufferSize bytes of whole frames. The bytes are
// the frames, in order.
func TestCorkWritesPerBatch(t *testing.T) {
	frame := bytes.Repeat([]byte("d"), 163) // a delta's frame in the fan-out benchmark
	const wire = 4 + 163                    // with its header: 126 says a 16-bit length follows
	tests := []struct {
		frames int
		writes []int // the bytes of each Write
	}{
		{1, []int{wire}},
		{10, []int{10 * wire}},
		{corkBufferSize / wire, []int{corkBufferSize / wire * wire}}, // fits the small buffer
		{3 * corkBigBufferSize / wire, []int{ // a burst: the big one
			corkBigBufferSize / wire * wire, corkBigBufferSize / wire * wire, corkBigBufferSize / wire * wire,
			(3*corkBigBufferSize/wire - 3*(corkBigBufferSize/wire)) * wire}},
	}
	for _, tt := range tests {
		frames := make([][]byte, tt.frames)
		for i := range frames {
			frames[i] = frame
		}
		sink := &countingConn{}
		cork := &corkConn{Conn: sink}
		if err := cork.writeRuns([]outRun{newRun(frames[:tt.frames/2]), newRun(frames[tt.frames/2:])}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sink.writes, tt.writes) {
			t.Errorf("%d frames: Writes of %v bytes, want %v", tt.frames, sink.writes, tt.writes)
		}
		want := bytes.Repeat(append([]byte{0x81, 126, 0, byte(len(frame))}, frame...), tt.frames)
		if !bytes.Equal(sink.out.Bytes(), want) {
			t.Errorf("%d frames: the bytes written are not the frames in order", tt.frames)
		}
	}
}

// Once the library has sent a close frame, writeRuns sends nothing more:
// no data frame may follow a close. The client does not answer the close
// yet, so the connection is still open when the relay tries.
func TestCorkNoFrameAfterClose(t *testing.T) {
	cork, ws, client := corkPair(t)
	if err := cork.writeRuns(single([]byte("before"))); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = ws.Close(websocket.StatusNormalClosure, "bye") // waits for the client's answer
	}()
	deadline := time.Now().Add(30 * time.Second)
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
	if err := cork.writeRuns(single([]byte("after"))); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a frame after the close frame: %v, want net.ErrClosed", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
