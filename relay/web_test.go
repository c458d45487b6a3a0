package relay_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/relay"
)

func httpGet(t *testing.T, method, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

// TestWebClientServed: GET / is the web client, for anyone (the token is in
// the URL's fragment, which never reaches the relay); /ws still needs the
// token and /healthz still answers.
func TestWebClientServed(t *testing.T) {
	e := start(t, func(c *relay.Config) { c.Token = "web-token-123" })
	base := e.srv.HTTPURL

	res, page := httpGet(t, http.MethodGet, base+"/")
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if !strings.Contains(page, `src="js/main.js"`) {
		t.Errorf("GET / is not the web client:\n%s", page)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("GET /: Content-Security-Policy %q", csp)
	}
	if res, _ := httpGet(t, http.MethodGet, base+"/js/main.js"); res.StatusCode != http.StatusOK {
		t.Errorf("GET /js/main.js: %d", res.StatusCode)
	}
	if res, body := httpGet(t, http.MethodGet, base+"/healthz"); res.StatusCode != http.StatusOK || body != "ok" {
		t.Errorf("GET /healthz: %d %q", res.StatusCode, body)
	}
	if got := httpStatusOfDial(t, e.srv.URL, nil); got != http.StatusUnauthorized {
		t.Errorf("upgrade without the token: %d, want 401", got)
	}
	if res, _ := httpGet(t, http.MethodGet, base+"/nothing-here"); res.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing-here: %d, want 404", res.StatusCode)
	}
	if res, _ := httpGet(t, http.MethodPost, base+"/"); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", res.StatusCode)
	}
}

// TestOwnOriginUpgrade: the page's upgrade (Origin: the relay's own
// origin) is allowed; every other browser origin is refused as before.
func TestOwnOriginUpgrade(t *testing.T) {
	e := start(t, func(c *relay.Config) { c.Token = "web-token-123" })
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.srv.HTTPURL, "http://"))
	other := "8"
	if port == "8" {
		other = "9"
	}
	url := e.srv.URL + "?token=web-token-123&client=web"
	cases := []struct {
		origin string
		want   int
	}{
		{e.srv.HTTPURL, http.StatusSwitchingProtocols},
		{"", http.StatusSwitchingProtocols}, // not a browser
		{"http://127.0.0.1:" + other, http.StatusForbidden},
		{"http://localhost:" + port, http.StatusForbidden}, // another origin, though the same machine
		{"http://evil.example", http.StatusForbidden},
	}
	for _, tc := range cases {
		var h http.Header
		if tc.origin != "" {
			h = http.Header{"Origin": {tc.origin}}
		}
		if got := httpStatusOfDial(t, url, h); got != tc.want {
			t.Errorf("Origin %q: %d, want %d", tc.origin, got, tc.want)
		}
	}
	// The own origin does not replace the token.
	if got := httpStatusOfDial(t, e.srv.URL, http.Header{"Origin": {e.srv.HTTPURL}}); got != http.StatusUnauthorized {
		t.Errorf("own origin without the token: %d, want 401", got)
	}
}

// TestDNSRebinding: a page of another site whose name resolves to 127.0.0.1
// reaches the relay with its own name as Host and as Origin. Without a
// token, and with one on loopback, only a loopback Host is answered; the
// web client's own-origin upgrade still works.
func TestDNSRebinding(t *testing.T) {
	for _, token := range []string{"", "rebind-token-271828"} {
		t.Run("token="+token, func(t *testing.T) { testDNSRebinding(t, token) })
	}
}

func testDNSRebinding(t *testing.T, token string) {
	e := start(t, func(c *relay.Config) { c.Token = token })
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.srv.HTTPURL, "http://"))
	url := e.srv.URL
	if token != "" {
		url += "?token=" + token
	}
	cases := []struct {
		host, origin string
		want         int
	}{
		{"evil.example:" + port, "http://evil.example:" + port, http.StatusForbidden},
		{"evil.example:" + port, "", http.StatusForbidden},
		{"localhost.evil.example:" + port, "http://localhost.evil.example:" + port, http.StatusForbidden},
		{"192.168.1.5:" + port, "", http.StatusForbidden},
		{"127.0.0.1:" + port, "http://127.0.0.1:" + port, http.StatusSwitchingProtocols}, // the web client
		{"localhost:" + port, "http://localhost:" + port, http.StatusSwitchingProtocols},
		{"[::1]:" + port, "", http.StatusSwitchingProtocols},
		{"127.0.0.2:9", "", http.StatusSwitchingProtocols},
	}
	for _, tc := range cases {
		hdr := http.Header{}
		if tc.origin != "" {
			hdr.Set("Origin", tc.origin)
		}
		if got := dialStatus(t, url, tc.host, hdr); got != tc.want {
			t.Errorf("token %q, Host %s, Origin %q: status %d, want %d", token, tc.host, tc.origin, got, tc.want)
		}
	}
	if !strings.Contains(e.logs.all(), "Host that is not loopback") {
		t.Errorf("the refusals were not logged:\n%s", e.logs.all())
	}
}

// dialStatus upgrades url with host as the Host header and returns the
// HTTP status (101 when the upgrade went through).
func dialStatus(t *testing.T, url, host string, header http.Header) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{Host: host, HTTPHeader: header})
	if err == nil {
		conn.CloseNow()
		return http.StatusSwitchingProtocols
	}
	if resp == nil {
		t.Fatalf("dial %s (Host %s): %v", url, host, err)
	}
	return resp.StatusCode
}
