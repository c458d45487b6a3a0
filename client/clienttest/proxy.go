// Package clienttest holds test helpers for code that uses the relay client:
// conversation events as the client hands them on (Event), and
// a TCP proxy that can cut every connection, so that tests can make a real
// client lose a real relay and watch it reconnect and resume.
package clienttest

import (
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy forwards TCP connections from its own address to a target address.
type Proxy struct {
	// URL is the target WebSocket URL with the proxy's address in its place.
	URL string

	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	// refuse makes the proxy close new connections at once (the relay looks
	// down).
	refuse bool
	// swallow makes the proxy drop what clients send instead of passing it
	// on (the relay never reads it); swallowed counts those bytes.
	swallow   bool
	swallowed int64
}

// StartProxy proxies to the host of wsURL (ws://HOST:PORT/path). It is shut
// down when the test ends.
func StartProxy(t testing.TB, wsURL string) *Proxy {
	t.Helper()
	u, err := url.Parse(wsURL)
	if err != nil {
		t.Fatalf("clienttest: parse %q: %v", wsURL, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("clienttest: listen: %v", err)
	}
	p := &Proxy{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	u.Host = ln.Addr().String()
	p.URL = u.String()
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.closed || p.refuse {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			up.Close()
			return
		}
		p.conns[c] = struct{}{}
		p.conns[up] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, &upstream{Conn: c, p: p})
	}
}

// upstream is a client's side of a connection, read for the relay: what
// it reads while the proxy swallows is dropped.
type upstream struct {
	net.Conn
	p *Proxy
}

func (u *upstream) Read(b []byte) (int, error) {
	for {
		n, err := u.Conn.Read(b)
		u.p.mu.Lock()
		swallow := u.p.swallow
		if swallow {
			u.p.swallowed += int64(n)
		}
		u.p.mu.Unlock()
		if !swallow || err != nil {
			if swallow {
				n = 0
			}
			return n, err
		}
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, err := io.Copy(dst, src)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		_ = err // a cut connection: expected
	}
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// DropAll cuts every open connection, as a network failure would.
func (p *Proxy) DropAll() {
	p.mu.Lock()
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// SetSwallow makes the proxy drop (true) or pass on (false) what its
// clients send, as a relay that never reads it: a frame written then is
// lost with the connection when DropAll cuts it.
func (p *Proxy) SetSwallow(v bool) {
	p.mu.Lock()
	p.swallow = v
	p.mu.Unlock()
}

// Swallowed returns how many bytes the proxy dropped while swallowing.
func (p *Proxy) Swallowed() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.swallowed
}

// SetRefuse makes the proxy refuse (true) or accept (false) new connections.
func (p *Proxy) SetRefuse(v bool) {
	p.mu.Lock()
	p.refuse = v
	p.mu.Unlock()
}

// Close stops the proxy and cuts every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	p.DropAll()
	p.wg.Wait()
}
