package relay

import (
	"net/http"
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
