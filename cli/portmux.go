package cli

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"
)

// portMux shares one listening port between TLS and plain HTTP, told
// apart by a connection's first byte (a TLS handshake record starts with
// 22). A relay reachable from the network serves its setup page in plain
// HTTP on the port of its https address (lansetup.go): a phone that does
// not trust the local CA yet opens http://ADDR:PORT/, and the address a
// QR code carries needs no second port, which would need remembering and
// a firewall's leave as well.
type portMux struct {
	base   net.Listener
	logger *slog.Logger
	tls    *muxListener
	plain  *muxListener

	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup // the accept loop and the connections being sniffed

	mu       sync.Mutex
	sniffing map[net.Conn]struct{}
}

// sniffTimeout bounds the wait for a connection's first byte.
const sniffTimeout = 10 * time.Second

// tlsRecordHandshake is the first byte of a TLS ClientHello.
const tlsRecordHandshake = 0x16

func newPortMux(base net.Listener, logger *slog.Logger) *portMux {
	m := &portMux{base: base, logger: logger, done: make(chan struct{}), sniffing: map[net.Conn]struct{}{}}
	m.tls, m.plain = m.newListener(), m.newListener()
	m.wg.Add(1)
	go m.accept()
	return m
}

func (m *portMux) newListener() *muxListener {
	return &muxListener{m: m, conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (m *portMux) accept() {
	defer m.wg.Done()
	for {
		c, err := m.base.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait a little, as
			// http.Server does, rather than spin.
			m.logger.Warn("accepting a connection", "err", err)
			select {
			case <-m.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		m.mu.Lock()
		select {
		case <-m.done:
			m.mu.Unlock()
			c.Close()
			return
		default:
		}
		m.sniffing[c] = struct{}{}
		m.wg.Add(1)
		m.mu.Unlock()
		go m.sniff(c)
	}
}

// sniff reads c's first byte and hands c, that byte put back, to the
// listener of its kind.
func (m *portMux) sniff(c net.Conn) {
	defer m.wg.Done()
	var first [1]byte
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	_, err := c.Read(first[:])
	_ = c.SetReadDeadline(time.Time{})
	m.mu.Lock()
	delete(m.sniffing, c)
	m.mu.Unlock()
	if err != nil {
		c.Close()
		return
	}
	to := m.plain
	if first[0] == tlsRecordHandshake {
		to = m.tls
	}
	select {
	case to.conns <- &prefixConn{Conn: c, first: first[0], pending: true}:
	case <-to.closed:
		c.Close()
	case <-m.done:
		c.Close()
	}
}

// Close stops accepting, closes the connections not yet handed over and
// waits for the mux's goroutines. The listeners' own Close only stops
// theirs (http.Server.Shutdown closes its listener).
func (m *portMux) Close() error {
	var err error
	m.closeOnce.Do(func() {
		m.mu.Lock()
		close(m.done)
		for c := range m.sniffing {
			c.Close()
		}
		m.mu.Unlock()
		err = m.base.Close()
		m.wg.Wait()
	})
	return err
}

// muxListener is one kind's side of a portMux.
type muxListener struct {
	m         *portMux
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

func (l *muxListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-l.m.done:
		return nil, net.ErrClosed
	}
}

func (l *muxListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *muxListener) Addr() net.Addr { return l.m.base.Addr() }

// prefixConn gives back the byte that was read to sniff it.
type prefixConn struct {
	net.Conn
	first   byte
	pending bool
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if c.pending && len(p) > 0 {
		// The byte alone: reading more could wait for data that a
		// client sends only after an answer.
		p[0], c.pending = c.first, false
		return 1, nil
	}
	return c.Conn.Read(p)
}
