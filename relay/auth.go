package relay

import (
	"container/list"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Before a connection has shown a token the relay takes, all it knows of
// it is the address it comes from. Two limits hold per address
// (docs/protocol.md, Limits and flow control): the HTTP connections that
// are not an open WebSocket (addrConns, through Relay.ConnState), and the
// wrong tokens (authThrottle).

// addrKey is the remote address a limit counts by: the IP address, or for
// IPv6 outside loopback its /64, which one host usually has whole.
func addrKey(a net.Addr) netip.Addr {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	ip := ap.Addr().Unmap().WithZone("")
	if ip.Is6() && !ip.IsLoopback() {
		p, _ := ip.Prefix(64)
		return p.Addr()
	}
	return ip
}

// remoteKey is addrKey of a request's remote address.
func remoteKey(req *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(req.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return addrKey(net.TCPAddrFromAddrPort(ap))
}

// addrConns holds, per remote address, the HTTP connections the server
// has that are not (yet) a WebSocket: those waiting for a request,
// between requests, or in one. Past max, a new connection closes the
// oldest of its address, so that one address cannot hold the server's
// file descriptors, and a client that has the token still gets in: its
// connection is the newest, and it stops counting once upgraded. Past
// total over all addresses, it closes the oldest of all: every loopback
// address (127.0.0.0/8) is any local user's to connect from, so 400 of
// them, 50 connections each, used all 20,000 file descriptors of the
// relay and the owner waited 22 s to connect (tools/flood -addrs 400).
// A reconnection storm of more than total clients at once loses some
// handshakes, which the clients retry.
type addrConns struct {
	max    int
	total  int
	mu     sync.Mutex // guards byAddr, all, elems
	byAddr map[netip.Addr]*list.List
	all    list.List // every connection, oldest first
	elems  map[net.Conn]connElems
}

// connElems are a connection's places in its address's list and in all.
type connElems struct{ inAddr, inAll *list.Element }

// ConnState is the http.Server's ConnState hook that counts the
// connections of each remote address (Config.MaxConnectionsPerAddress)
// and of all (Config.MaxConnectionsNotWebSocket). The server that serves
// Handler sets it.
func (r *Relay) ConnState(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		if old := r.addrs.add(c); old != nil {
			r.log.Debug("relay: too many connections that are no WebSocket (of an address, or of all); closed the oldest", "remote", c.RemoteAddr().String(),
				"closed", old.RemoteAddr().String(), "perAddress", r.addrs.max, "total", r.addrs.total)
			_ = old.Close()
		}
	case http.StateHijacked, http.StateClosed:
		r.addrs.remove(c)
	}
}

// add counts c, and returns the connection it displaces, if any.
func (a *addrConns) add(c net.Conn) (oldest net.Conn) {
	key := addrKey(c.RemoteAddr())
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byAddr == nil {
		a.byAddr, a.elems = map[netip.Addr]*list.List{}, map[net.Conn]connElems{}
	}
	l := a.byAddr[key]
	if l == nil {
		l = list.New()
		a.byAddr[key] = l
	}
	a.elems[c] = connElems{inAddr: l.PushBack(c), inAll: a.all.PushBack(c)}
	switch {
	case l.Len() > a.max:
		oldest = l.Front().Value.(net.Conn)
	case a.total > 0 && a.all.Len() > a.total:
		oldest = a.all.Front().Value.(net.Conn)
	default:
		return nil
	}
	a.removeLocked(oldest)
	return oldest
}

func (a *addrConns) remove(c net.Conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.removeLocked(c)
}

func (a *addrConns) removeLocked(c net.Conn) {
	e, ok := a.elems[c]
	if !ok {
		return
	}
	delete(a.elems, c)
	a.all.Remove(e.inAll)
	key := addrKey(c.RemoteAddr())
	l := a.byAddr[key]
	l.Remove(e.inAddr)
	if l.Len() == 0 {
		delete(a.byAddr, key)
	}
}

// count is how many connections of key are held (for tests).
func (a *addrConns) count(key netip.Addr) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if l := a.byAddr[key]; l != nil {
		return l.Len()
	}
	return 0
}

// countAll is how many connections are held (for tests).
func (a *addrConns) countAll() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.all.Len()
}

// authThrottle slows down the guessing of tokens: an address that has
// presented more than allowed wrong tokens in a burst (failures less than
// authBurstGap apart, not counting the delays) has its upgrades answered 429, without a look at
// their token, for a delay that doubles with each further wrong token (1 s
// up to authMaxDelay). A right token ends the burst. The log says once per
// burst that an address is throttled, and once that its burst ended, with
// the address and the count: never a token.
type authThrottle struct {
	allowed int
	mu      sync.Mutex // guards byAddr
	byAddr  map[netip.Addr]*authFailures
}

type authFailures struct {
	count int       // wrong tokens in this burst
	last  time.Time // the last one
	until time.Time // throttled until then
}

const (
	authBurstGap   = time.Minute
	authMaxDelay   = time.Minute
	authMaxEntries = 1 << 16
)

// throttled says how long the address must still wait, if it must.
func (t *authThrottle) throttled(addr netip.Addr, now time.Time) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.byAddr[addr]
	if f == nil || !now.Before(f.until) {
		return 0, false
	}
	return f.until.Sub(now), true
}

// fail counts a wrong token from addr.
func (t *authThrottle) fail(log *slog.Logger, addr netip.Addr, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byAddr == nil {
		t.byAddr = map[netip.Addr]*authFailures{}
	}
	f := t.byAddr[addr]
	if f != nil && t.overLocked(f, now) {
		t.endLocked(log, addr, f)
		f = nil
	}
	if f == nil {
		t.pruneLocked(log, now)
		f = &authFailures{}
		t.byAddr[addr] = f
	}
	f.count++
	f.last = now
	if over := f.count - t.allowed; over > 0 {
		delay := time.Second << min(over-1, 6)
		f.until = now.Add(min(delay, authMaxDelay))
		if over == 1 {
			log.Warn("relay: wrong tokens from one address; throttling its upgrades (HTTP 429) until they stop",
				"remote", addr.String(), "failures", f.count)
		}
	}
}

// succeeded ends addr's burst: the right token came from there.
func (t *authThrottle) succeeded(log *slog.Logger, addr netip.Addr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.byAddr[addr]; f != nil {
		t.endLocked(log, addr, f)
	}
}

// overLocked reports whether f's burst has ended by now: a minute went by
// without a failure, counted from the end of its delay (so that waiting
// out the delays does not start a new burst).
func (t *authThrottle) overLocked(f *authFailures, now time.Time) bool {
	quietFrom := f.last
	if f.until.After(quietFrom) {
		quietFrom = f.until
	}
	return now.Sub(quietFrom) >= authBurstGap
}

func (t *authThrottle) endLocked(log *slog.Logger, addr netip.Addr, f *authFailures) {
	if f.count > t.allowed {
		log.Info("relay: a burst of wrong tokens from one address ended", "remote", addr.String(), "failures", f.count)
	}
	delete(t.byAddr, addr)
}

// pruneLocked keeps the table bounded whatever the number of addresses:
// when it is full it drops the bursts that have ended and, if that is not
// a quarter of it, any others until it is (each address is then free for
// its first failures again, which is all an attacker with that many
// addresses gains). Amortised, a failure costs O(1).
func (t *authThrottle) pruneLocked(log *slog.Logger, now time.Time) {
	if len(t.byAddr) < authMaxEntries {
		return
	}
	for addr, f := range t.byAddr {
		if t.overLocked(f, now) {
			t.endLocked(log, addr, f)
		}
	}
	for addr, f := range t.byAddr {
		if len(t.byAddr) <= authMaxEntries*3/4 {
			break
		}
		t.endLocked(log, addr, f)
	}
}

// refuseThrottled answers an upgrade from a throttled address.
func refuseThrottled(w http.ResponseWriter, wait time.Duration) {
	secs := int(math.Ceil(wait.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	http.Error(w, fmt.Sprintf("too many requests: this address presented too many wrong tokens; try again in %d s", secs), http.StatusTooManyRequests)
}
