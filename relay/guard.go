package relay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// What a client sends is read by coder/websocket, which reads a message
// up to its read limit before it says the message is too large (64 MiB of
// a frame declaring 100 MiB, issue #33), and drops a connection that sends
// an unmasked frame without a close frame, which the relay then closed
// with 1000. frameGuard sees each frame's header first, in the bytes the
// library reads from the socket (corkConn.Read), and stops the reading at
// once: a message declaring more than the read limit (its frames' lengths
// added up) ends the connection with 1009 before its payload is read, an
// unmasked frame with 1002 (RFC 6455 §5.1). conn.readFailed closes with
// those codes.

var (
	errMessageTooBig = fmt.Errorf("a message declares more than the %d MiB the relay reads", discardLimit>>20)
	errUnmasked      = errors.New("a client frame is not masked")
)

// frameGuard follows the frames of a byte stream from a client: it holds
// the header being read, then counts off its payload. Only the
// connection's reader uses it.
type frameGuard struct {
	limit  int64
	hdr    [14]byte
	nhdr   int   // bytes of hdr held
	need   int   // bytes the header has: known once its second byte is
	skip   int64 // bytes of the current frame's payload still to come
	msgLen int64 // bytes the message's frames so far declare
	err    error // the first error: every later read returns it
}

// scan follows p, the next bytes of the stream, and returns the error
// its frames make, if any.
func (g *frameGuard) scan(p []byte) error {
	for len(p) > 0 {
		if g.skip > 0 {
			n := min(int64(len(p)), g.skip)
			g.skip -= n
			p = p[n:]
			continue
		}
		g.hdr[g.nhdr] = p[0]
		g.nhdr++
		p = p[1:]
		if g.nhdr == 2 {
			if g.hdr[1]&0x80 == 0 {
				return errUnmasked
			}
			g.need = 2 + 4 // and the mask key
			switch g.hdr[1] & 0x7f {
			case 126:
				g.need += 2
			case 127:
				g.need += 8
			}
		}
		if g.nhdr < 2 || g.nhdr < g.need {
			continue
		}
		length := int64(g.hdr[1] & 0x7f)
		switch length {
		case 126:
			length = int64(binary.BigEndian.Uint16(g.hdr[2:4]))
		case 127:
			length = int64(min(binary.BigEndian.Uint64(g.hdr[2:10]), math.MaxInt64/2))
		}
		if op := g.hdr[0] & 0x0f; op < 0x8 { // a data frame: text, binary or continuation
			if op != 0 {
				g.msgLen = 0
			}
			g.msgLen += length
			if g.msgLen > g.limit {
				return errMessageTooBig
			}
			if g.hdr[0]&0x80 != 0 { // FIN
				g.msgLen = 0
			}
		}
		g.skip, g.nhdr, g.need = length, 0, 0
	}
	return nil
}

// Read reads what the client sent: first what the server had read ahead
// of the upgrade, then the socket; each byte passes the guard.
func (c *corkConn) Read(p []byte) (int, error) {
	if c.guard.err != nil {
		return 0, c.guard.err
	}
	var n int
	var err error
	if len(c.ahead) > 0 {
		n = copy(p, c.ahead)
		c.ahead = c.ahead[n:]
	} else {
		n, err = c.Conn.Read(p)
	}
	if gerr := c.guard.scan(p[:n]); gerr != nil {
		c.guard.err = gerr
		return 0, gerr
	}
	return n, err
}
