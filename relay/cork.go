package relay

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sync"
)

// corkConn is a net.Conn whose writes can be held back ("corked") and sent
// with one Write when uncorked. coder/websocket flushes after every message,
// so without it every delivery is one write syscall; with it a connection's
// writer goroutine writes every frame already queued for that connection and
// then makes one syscall (research/relay-performance.md).
//
// Writes that arrive while not corked (pongs and close frames written by the
// library's own goroutines) go straight through; ones that arrive while corked
// leave with the batch, so nothing waits for a timer.
type corkConn struct {
	net.Conn

	mu     sync.Mutex
	corked bool
	buf    []byte
}

// maxKeptCorkBuffer bounds the buffer kept between batches: a burst may grow
// it, an idle connection should not keep that memory.
const maxKeptCorkBuffer = 64 << 10

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork sends everything written while corked with one Write.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	if cap(c.buf) > maxKeptCorkBuffer {
		c.buf = nil
	} else {
		c.buf = c.buf[:0]
	}
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
	w.conn = &corkConn{Conn: nc}
	// Keep the reader: it may already hold bytes the client sent.
	return w.conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(w.conn, writeBufferSize)), nil
}
