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

// corkConn is a net.Conn whose writes can be held back ("corked") and sent
// with one Write when uncorked. coder/websocket flushes after every message,
// so without it every delivery is one write syscall; with it a connection's
// writer goroutine writes every frame already queued for that connection and
// then makes one syscall. That syscall, not JSON or Go, is most of the cost
// of a delivery: with 50 subscribers on two cores, batching cut the relay's
// CPU time per delivery from about 7 µs to about 2 µs.
//
// Writes that arrive while not corked (pongs and close frames written by the
// library's own goroutines) go straight through; ones that arrive while corked
// leave with the batch, so nothing waits for a timer.
type corkConn struct {
	net.Conn

	mu     sync.Mutex // guards corked, buf, closeSent; held across writes to Conn, which so keep their order
	corked bool
	buf    *[]byte // from corkBuffers while corked, nil otherwise
	// closeSent: the library wrote a close frame, after which writeText
	// writes nothing (RFC 6455 §5.5.1: no data frame after a close).
	closeSent bool
	hdr       [10]byte // writeText's frame header: a field, so that it is not allocated per frame

	// The read side, the connection's reader's alone (guard.go): what the
	// server read ahead of the upgrade, and the guard of the frames read.
	ahead []byte
	guard frameGuard
}

// corkBufferSize is the most a corked connection holds back: a batch larger
// than that leaves in chunks of this size, still far fewer syscalls than one
// per frame, and no buffer grows with the batch.
const corkBufferSize = 32 << 10

// corkBuffers lends buffers to corked connections only, so an idle
// connection holds none.
var corkBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, corkBufferSize)
	return &b
}}

// Write is the library's path: the upgrade's leftovers, and its control
// frames (pong, close). Each of those reaches here whole, in one Write: the
// library's bufio.Writer (writeBufferSize) holds a frame until it flushes
// it, and a control frame is at most 127 bytes; data frames leave by
// writeText. So p starts with a frame's header, and a close frame shows.
func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(p) > 0 && p[0]&0x0f == opClose {
		c.closeSent = true
	}
	return c.writeLocked(p)
}

// opClose is a close frame's opcode (RFC 6455 §5.2).
const opClose = 0x8

func (c *corkConn) writeLocked(p []byte) (int, error) {
	if !c.corked {
		return c.Conn.Write(p)
	}
	if c.buf == nil {
		c.buf = corkBuffers.Get().(*[]byte)
	}
	b := *c.buf
	if len(b)+len(p) > cap(b) && len(b) > 0 {
		if _, err := c.Conn.Write(b); err != nil {
			*c.buf = b[:0]
			return 0, err
		}
		b = b[:0]
	}
	*c.buf = b
	if len(p) > cap(b) {
		return c.Conn.Write(p) // bigger than the buffer: nothing is gained by copying it
	}
	*c.buf = append(b, p...)
	return len(p), nil
}

// writeText writes one text message as one frame, laid out as RFC 6455
// §5.2 says a server sends it: FIN set, no extension bits (the relay
// negotiates no compression), not masked, the length in 7, 16 or 64 bits.
// The relay's writer sends every data frame with it instead of
// websocket.Conn.Write, whose per-message work (two channel-based locks,
// each a select, a message writer reset, its own buffer and a flush) was
// three quarters of the relay's CPU time per delivery in a burst to 50
// subscribers; the library still reads, answers pings and closes. Header
// and payload are written under one hold of the lock, so a control frame
// the library writes meanwhile goes before or after the frame, never
// inside it.
func (c *corkConn) writeText(p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeSent {
		return fmt.Errorf("write a frame: %w", net.ErrClosed)
	}
	hdr := c.hdr[:]
	hdr[0] = 0x80 | 0x1 // FIN, text
	n := 2
	switch l := len(p); {
	case l <= 125:
		hdr[1] = byte(l)
	case l <= 0xffff:
		hdr[1] = 126
		binary.BigEndian.PutUint16(hdr[2:], uint16(l))
		n = 4
	default:
		hdr[1] = 127
		binary.BigEndian.PutUint64(hdr[2:], uint64(l))
		n = 10
	}
	if _, err := c.writeLocked(hdr[:n]); err != nil {
		return err
	}
	_, err := c.writeLocked(p)
	return err
}

func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork sends what was held back with one Write.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	if c.buf == nil {
		return nil
	}
	var err error
	if b := *c.buf; len(b) > 0 {
		_, err = c.Conn.Write(b)
	}
	*c.buf = (*c.buf)[:0]
	corkBuffers.Put(c.buf)
	c.buf = nil
	return err
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

// writeBufferSize is the bufio.Writer the library writes frames into. Frames
// larger than it pass through to the corkConn, which buffers the batch, so a
// small buffer costs nothing and keeps idle connections cheap.
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
