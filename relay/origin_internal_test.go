package relay

import (
	"crypto/tls"
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
