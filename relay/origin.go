package relay

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/coder/websocket"
)

// acceptFor returns the upgrade options for req. A browser upgrade whose
// Origin is the relay's own origin (the scheme and host the request came
// to) is the relay's web client, served at GET /: it is allowed by this
// rule of the protocol, not left to the WebSocket library's default. Every
// other request gets the configured options, so the library's checks
// (same host, Config.OriginPatterns, no Origin at all) apply as before.
func (r *Relay) acceptFor(req *http.Request) *websocket.AcceptOptions {
	if !ownOrigin(req) {
		return &r.acceptOptions
	}
	opts := r.acceptOptions
	opts.InsecureSkipVerify = true // skips the Origin check only; ownOrigin did it
	return &opts
}

// ownOrigin reports whether req's Origin header names the origin req was
// sent to: "http://" or "https://" (as the connection is TLS or not) and
// the Host header, compared case-insensitively.
func ownOrigin(req *http.Request) bool {
	origin := req.Header.Get("Origin")
	if origin == "" || req.Host == "" {
		return false
	}
	scheme := "http://"
	if req.TLS != nil {
		scheme = "https://"
	}
	return strings.EqualFold(origin, scheme+req.Host)
}

// hostAllowed is the defence against DNS rebinding: a web page of another
// site whose name was made to resolve to 127.0.0.1 reaches a relay on
// loopback with its own name in the Host header, and as its Origin is then
// that same name, the own-origin rule (ownOrigin) would let it in. So the
// Host header must be a loopback name or address (localhost, 127.0.0.0/8,
// ::1, any port) on every upgrade of a relay without a token, and of a
// relay with one that took the connection on a loopback address. A relay
// with a token on another address is reached by its LAN name, which cannot
// be listed, and the page has no token. A relay that runs without a token
// on another address (--insecure-no-auth) also answers to the IP address
// the connection came in on: a rebinding page always has a name, never an
// address, in its Host.
func (r *Relay) hostAllowed(req *http.Request) bool {
	local := localAddr(req)
	if r.token && local.IsValid() && !local.Unmap().IsLoopback() {
		return true
	}
	host := hostName(req.Host)
	if strings.EqualFold(host, "localhost") || strings.EqualFold(host, "localhost.") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	return addr.IsLoopback() || (!r.token && local.IsValid() && addr == local.Unmap())
}

// localAddr is the address the request's connection was accepted on, or
// the zero Addr when the server did not say (then the strict rule applies).
func localAddr(req *http.Request) netip.Addr {
	a, _ := req.Context().Value(http.LocalAddrContextKey).(net.Addr)
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	addr, _ := netip.AddrFromSlice(tcp.IP)
	return addr.WithZone("")
}

// hostName is the host of a Host header without its port and brackets.
func hostName(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}
