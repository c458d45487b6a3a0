package relay_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/relay"
)

// rawUpgrade opens a TCP connection to the relay and sends a WebSocket
// upgrade with the token, followed in the same write by extra (frames
// the server reads ahead of the upgrade). It returns the connection and
// a reader past the 101 response.
func rawUpgrade(t *testing.T, e *env, extra []byte) (net.Conn, *bufio.Reader) {
	t.Helper()
	addr := strings.TrimPrefix(e.srv.HTTPURL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(wait))
	req := "GET /ws HTTP/1.1\r\nHost: " + addr + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
		"Authorization: Bearer " + e.srv.Token + "\r\n\r\n"
	if _, err := c.Write(append([]byte(req), extra...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %s", resp.Status)
	}
	return c, br
}

// clientFrame is a frame as a client sends it: FIN, the opcode, masked
// (with a zero key, which leaves the payload as it is) unless unmasked,
// and a header declaring declared bytes, followed by payload.
func clientFrame(op byte, declared uint64, payload []byte, masked bool) []byte {
	f := []byte{0x80 | op, 0}
	switch {
	case declared <= 125:
		f[1] = byte(declared)
	case declared <= 0xffff:
		f[1] = 126
		f = binary.BigEndian.AppendUint16(f, uint16(declared))
	default:
		f[1] = 127
		f = binary.BigEndian.AppendUint64(f, declared)
	}
	if masked {
		f[1] |= 0x80
		f = append(f, 0, 0, 0, 0)
	}
	return append(f, payload...)
}

// serverFrame reads one frame from the server (unmasked, as a server
// sends them) and returns its opcode and payload.
func serverFrame(t *testing.T, br *bufio.Reader) (byte, []byte) {
	t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		t.Fatalf("no frame: %v", err)
	}
	n := int(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		_, _ = io.ReadFull(br, l[:])
		n = int(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		_, _ = io.ReadFull(br, l[:])
		n = int(binary.BigEndian.Uint64(l[:]))
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(br, p); err != nil {
		t.Fatalf("a frame cut short: %v", err)
	}
	return h[0] & 0x0f, p
}

// closeCode reads the server's frames until its close frame, and returns
// the close code and the data frames before it.
func closeCode(t *testing.T, br *bufio.Reader) (websocket.StatusCode, []string) {
	t.Helper()
	var before []string
	for {
		op, p := serverFrame(t, br)
		if op == 0x8 {
			if len(p) < 2 {
				return websocket.StatusNoStatusRcvd, before
			}
			return websocket.StatusCode(binary.BigEndian.Uint16(p)), before
		}
		before = append(before, string(p))
	}
}

// A message declaring more than the relay reads (64 MiB) is closed with
// 1009 at once: the client sent its header and 1 KiB of the 100 MiB, and
// gets the close without sending more. The same when the frame came in
// the upgrade's own packet (read ahead by the HTTP server).
func TestDeclaredTooBigCloses1009(t *testing.T) {
	parallel(t)
	e := start(t, func(c *relay.Config) { c.Token = ownToken })
	frame := clientFrame(0x1, 100<<20, make([]byte, 1024), true)
	c, br := rawUpgrade(t, e, nil)
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	if code, before := closeCode(t, br); code != websocket.StatusMessageTooBig {
		t.Fatalf("a frame declaring 100 MiB: close %d (after %q), want 1009", code, before)
	}
	_, br = rawUpgrade(t, e, frame)
	if code, before := closeCode(t, br); code != websocket.StatusMessageTooBig {
		t.Fatalf("a frame declaring 100 MiB, sent with the upgrade: close %d (after %q), want 1009", code, before)
	}
	// A frame within the limit is read, and a masked ping answered; then
	// a close is answered with a normal close. The close is sent only
	// after the pong came: sent at once, it may be read before the ping's
	// answer is written, and the relay rightly answers nothing more.
	c, br = rawUpgrade(t, e, clientFrame(0x1, 15, []byte(`{"type":"ping"}`), true))
	if op, p := serverFrame(t, br); op != 0x1 || !strings.Contains(string(p), "pong") {
		t.Fatalf("a ping: frame %#x %q, want a text frame with the pong", op, p)
	}
	if _, err := c.Write(clientFrame(0x8, 2, []byte{0x03, 0xe8}, true)); err != nil {
		t.Fatal(err)
	}
	if code, before := closeCode(t, br); code != websocket.StatusNormalClosure || len(before) != 0 {
		t.Fatalf("a close after the pong: %q then close %d, want close 1000 alone", before, code)
	}
}

// An unmasked client frame closes the connection with 1002 (RFC 6455
// §5.1), and is not acted on.
func TestUnmaskedFrameCloses1002(t *testing.T) {
	parallel(t)
	e := start(t, func(c *relay.Config) { c.Token = ownToken })
	c, br := rawUpgrade(t, e, nil)
	if _, err := c.Write(clientFrame(0x1, 15, []byte(`{"type":"ping"}`), false)); err != nil {
		t.Fatal(err)
	}
	if code, before := closeCode(t, br); code != websocket.StatusProtocolError || len(before) != 0 {
		t.Fatalf("an unmasked frame: %q then close %d, want close 1002 alone", before, code)
	}
}
