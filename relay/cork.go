package relay

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"sync"
)

// corkConn is the net.Conn under a WebSocket connection. The relay's writer
// lays its data frames out itself (writeRuns): every frame of a batch is
// written into one buffer and leaves with one Write, where coder/websocket
// would make a syscall per message. That syscall, not JSON or Go, is most of
// the cost of a delivery: with 50 subscribers on two cores, batching cut the
// relay's CPU time per delivery from about 7 µs to about 2 µs.
//
// The library's own writes (pongs, the close frame, written by its
// goroutines) go through Write, under the same lock, so they leave before
// or after a batch, never inside a frame.
type corkConn struct {
	net.Conn

	mu sync.Mutex // guards closeSent; held across writes to Conn, which so keep their order
	// closeSent: the library wrote a close frame, after which writeRuns
	// writes nothing (RFC 6455 §5.5.1: no data frame after a close).
	closeSent bool

	// The read side, the connection's reader's alone (guard.go): what the
	// server read ahead of the upgrade, and the guard of the frames read.
	ahead []byte
	guard frameGuard
}

// The buffers a batch is laid out in, and so the most one Write sends: a
// batch larger than its buffer leaves in writes of about the buffer's
// size, and no buffer grows with the batch. A batch over corkBufferSize (a
// connection behind in a burst) gets a buffer of corkBigBufferSize: the
// syscall, not the copy, is most of a delivery's cost, and in a burst to
// 50 subscribers the relay's CPU per delivery fell by about a sixth from
// 32 KiB writes to 128 KiB ones, and no further with 256 or 512 KiB. A
// connection that keeps up sends small batches from a small buffer, so a
// connection stuck in a write to a client that stopped reading holds
// 128 KiB only when it was already behind.
const (
	corkBufferSize    = 32 << 10
	corkBigBufferSize = 128 << 10
)

// corkBuffers lends buffers to the writers while they write a batch only,
// so an idle connection holds none: [0] of corkBufferSize, [1] of
// corkBigBufferSize.
var corkBuffers = [2]sync.Pool{
	{New: func() any { b := make([]byte, 0, corkBufferSize); return &b }},
	{New: func() any { b := make([]byte, 0, corkBigBufferSize); return &b }},
}

// Write is the library's path: the upgrade's leftovers, and its control
// frames (pong, close). Each of those reaches here whole, in one Write: the
// library's bufio.Writer (writeBufferSize) holds a frame until it flushes
// it, and a control frame is at most 127 bytes; data frames leave by
// writeRuns. So p starts with a frame's header, and a close frame shows.
func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(p) > 0 && p[0]&0x0f == opClose {
		c.closeSent = true
	}
	return c.Conn.Write(p)
}

// opClose is a close frame's opcode (RFC 6455 §5.2).
const opClose = 0x8

// writeRuns writes every frame of runs, in order, each as one text message
// in one frame laid out as RFC 6455 §5.2 says a server sends it: FIN set,
// no extension bits (the relay negotiates no compression), not masked, the
// length in 7, 16 or 64 bits. The frames are copied into one buffer that
// leaves with one Write when it is full and at the end, so a batch costs a
// syscall per buffer (see corkBufferSize); a frame larger than the buffer
// is written from where it lies. The relay's writer sends every data frame
// so instead of with websocket.Conn.Write, whose per-message work (two
// channel-based locks, each a select, a message writer reset, its own
// buffer and a flush) was three quarters of the relay's CPU time per
// delivery in a burst to 50 subscribers; the library still reads, answers
// pings and closes. The lock is held for the whole batch, not taken per
// frame: a control frame the library writes meanwhile goes after it.
func (c *corkConn) writeRuns(runs []outRun) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeSent {
		return fmt.Errorf("write a frame: %w", net.ErrClosed)
	}
	pool := &corkBuffers[0]
	if runsBytes(runs) > corkBufferSize {
		pool = &corkBuffers[1]
	}
	buf := pool.Get().(*[]byte)
	b, err := c.layOut((*buf)[:0], runs)
	if err == nil && len(b) > 0 {
		_, err = c.Conn.Write(b)
	}
	*buf = b[:0]
	pool.Put(buf)
	return err
}

// layOut appends the frames of runs to b, writing b out whenever the next
// frame would not fit, and returns what is left to write.
func (c *corkConn) layOut(b []byte, runs []outRun) ([]byte, error) {
	var err error
	for i := range runs {
		r := &runs[i]
		if r.frames == nil {
			if b, err = c.layOutFrame(b, r.one); err != nil {
				return b, err
			}
			continue
		}
		for _, p := range r.frames {
			if b, err = c.layOutFrame(b, p); err != nil {
				return b, err
			}
		}
	}
	return b, nil
}

// layOutFrame appends p's frame to b, after writing b out if the frame
// would not fit in what is left of it.
func (c *corkConn) layOutFrame(b, p []byte) ([]byte, error) {
	n := frameHeaderLen(len(p))
	if len(b)+n+len(p) > cap(b) && len(b) > 0 {
		if _, err := c.Conn.Write(b); err != nil {
			return b[:0], err
		}
		b = b[:0]
	}
	b = appendFrameHeader(b, len(p))
	if len(b)+len(p) > cap(b) {
		// Larger than the buffer: nothing is gained by copying it.
		if _, err := c.Conn.Write(b); err != nil {
			return b[:0], err
		}
		_, err := c.Conn.Write(p)
		return b[:0], err
	}
	return append(b, p...), nil
}

// frameHeaderLen is the length of the header of a server's frame with n
// bytes of payload: the length takes 7, 16 or 64 bits.
func frameHeaderLen(n int) int {
	switch {
	case n <= 125:
		return 2
	case n <= 0xffff:
		return 4
	default:
		return 10
	}
}

// appendFrameHeader appends the header of a server's text frame with n
// bytes of payload: FIN, text, not masked, the length.
func appendFrameHeader(b []byte, n int) []byte {
	const finText = 0x80 | 0x1
	switch {
	case n <= 125:
		return append(b, finText, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, finText, 126), uint16(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, finText, 127), uint64(n))
	}
}

// Close closes the underlying connection without taking the lock, so that it
// unblocks a write stuck on a peer that stopped reading.
func (c *corkConn) Close() error { return c.Conn.Close() }

// corkingWriter wraps the http.ResponseWriter handed to websocket.Accept so
// that the connection it hijacks is a corkConn.
type corkingWriter struct {
	http.ResponseWriter
	conn *corkConn // set by Hijack
}

// writeBufferSize is the bufio.Writer the library writes frames into: its
// control frames, and the error frame of a connection refused at the
// upgrade (data frames leave by writeRuns). Larger frames pass through, so
// a small buffer costs nothing and keeps idle connections cheap.
const writeBufferSize = 1024

func (w *corkingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// The 101 response is written by Hijack; make sure nothing is left behind
	// in the writer we are about to replace.
	if brw.Writer.Buffered() > 0 {
		if err := brw.Writer.Flush(); err != nil {
			nc.Close()
			return nil, nil, fmt.Errorf("flush the upgrade response: %w", err)
		}
	}
	// The reader may already hold bytes the client sent: they are read
	// again through the corkConn, so that its guard sees every frame.
	ahead, _ := brw.Reader.Peek(brw.Reader.Buffered())
	w.conn = &corkConn{Conn: nc, ahead: bytes.Clone(ahead), guard: frameGuard{limit: discardLimit}}
	brw.Reader.Reset(w.conn)
	return w.conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(w.conn, writeBufferSize)), nil
}
