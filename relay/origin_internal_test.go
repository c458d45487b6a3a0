package relay

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestOwnOrigin(t *testing.T) {
	cases := []struct {
		name   string
		host   string
		tls    bool
		origin string
		want   bool
	}{
		{"same origin", "127.0.0.1:7420", false, "http://127.0.0.1:7420", true},
		{"same origin over TLS", "buildbox.lan:7420", true, "https://buildbox.lan:7420", true},
		{"case does not matter", "BuildBox.lan:7420", false, "http://buildbox.LAN:7420", true},
		{"no Origin: not a browser", "127.0.0.1:7420", false, "", false},
		{"another port", "127.0.0.1:7420", false, "http://127.0.0.1:7421", false},
		{"another host", "127.0.0.1:7420", false, "http://evil.example", false},
		{"https page, plain relay", "127.0.0.1:7420", false, "https://127.0.0.1:7420", false},
		{"http page, TLS relay", "buildbox.lan:7420", true, "http://buildbox.lan:7420", false},
		{"a path is not an origin", "127.0.0.1:7420", false, "http://127.0.0.1:7420/", false},
		{"null origin", "127.0.0.1:7420", false, "null", false},
	}
	for _, tc := range cases {
		req := httptest.NewRequest("GET", "/ws", nil)
		req.Host = tc.host
		if tc.tls {
			req.TLS = &tls.ConnectionState{}
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if got := ownOrigin(req); got != tc.want {
			t.Errorf("%s: ownOrigin = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHostAllowed(t *testing.T) {
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7420}
	lan := &net.TCPAddr{IP: net.IPv4(192, 168, 1, 5), Port: 7420}
	cases := []struct {
		name  string
		token bool
		local net.Addr // nil: the server did not say
		host  string
		want  bool
	}{
		{"no token, 127.0.0.1", false, loopback, "127.0.0.1:7420", true},
		{"no token, another loopback address and port", false, loopback, "127.3.2.1:1", true},
		{"no token, localhost", false, loopback, "localhost:7420", true},
		{"no token, LOCALHOST without a port", false, loopback, "LOCALHOST", true},
		{"no token, localhost.", false, loopback, "localhost.:7420", true},
		{"no token, [::1]", false, loopback, "[::1]:7420", true},
		{"no token, ::1 without a port", false, loopback, "::1", true},
		{"no token, IPv4-mapped loopback", false, loopback, "[::ffff:127.0.0.1]:7420", true},
		{"no token, rebinding name", false, loopback, "evil.example:7420", false},
		{"no token, a name under localhost's", false, loopback, "localhost.evil.example:7420", false},
		{"no token, a name ending in localhost", false, loopback, "evillocalhost:7420", false},
		{"no token, a LAN address", false, loopback, "192.168.1.5:7420", false},
		{"no token, empty Host", false, loopback, "", false},
		{"no token, unknown local address, rebinding", false, nil, "evil.example:7420", false},
		{"no token, unknown local address, 127.0.0.1", false, nil, "127.0.0.1:7420", true},
		{"token on loopback, rebinding name", true, loopback, "evil.example:7420", false},
		{"token on loopback, localhost", true, loopback, "localhost:7420", true},
		{"token on a LAN address, its name", true, lan, "buildbox.lan:7420", true},
		{"token on a LAN address, its address", true, lan, "192.168.1.5:7420", true},
		{"no token on a LAN address, its address", false, lan, "192.168.1.5:7420", true},
		{"no token on a LAN address, another address", false, lan, "192.168.1.6:7420", false},
		{"no token on a LAN address, a name", false, lan, "buildbox.lan:7420", false},
		{"no token on a LAN address, 127.0.0.1", false, lan, "127.0.0.1:7420", true},
	}
	for _, tc := range cases {
		r := &Relay{token: tc.token}
		req := httptest.NewRequest("GET", "/ws", nil)
		if tc.local != nil {
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, tc.local))
		}
		req.Host = tc.host
		if got := r.hostAllowed(req); got != tc.want {
			t.Errorf("%s: hostAllowed = %v, want %v", tc.name, got, tc.want)
		}
	}
}
