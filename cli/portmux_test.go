package cli

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// One port, two kinds: a connection whose first byte starts a TLS record
// goes to the TLS side, any other to the plain side, its bytes intact.
// A connection that has sent nothing yet is closed with the mux, whose
// Close returns once its goroutines have ended.
func TestPortMux(t *testing.T) {
	base, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := newPortMux(base, slog.New(slog.DiscardHandler))
	accept := func(l net.Listener, want string) {
		t.Helper()
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got := make([]byte, len(want))
		_ = c.SetReadDeadline(time.Now().Add(relaytest.Timeout))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	send := func(b string) net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", base.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte(b)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	plain := send("GET / HTTP/1.1\r\n")
	defer plain.Close()
	accept(m.plain, "GET / HTTP/1.1\r\n")
	hello := send("\x16\x03\x01\x00\x05hello")
	defer hello.Close()
	accept(m.tls, "\x16\x03\x01\x00\x05hello")

	silent, err := net.Dial("tcp", base.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// Wait until the mux is sniffing it.
	for deadline := time.Now().Add(relaytest.Timeout); ; time.Sleep(5 * time.Millisecond) {
		m.mu.Lock()
		n := len(m.sniffing)
		m.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the silent connection was not accepted")
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(sniffTimeout / 2):
		t.Fatal("Close waited for a silent connection's first byte")
	}
	_ = silent.SetReadDeadline(time.Now().Add(relaytest.Timeout))
	if _, err := silent.Read(make([]byte, 1)); err == nil {
		t.Fatal("the silent connection is still open")
	}
	if _, err := m.plain.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
}
