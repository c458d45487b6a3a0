package reliability

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// upgrade sends a WebSocket upgrade request (GET /ws with the handshake
// headers) with extra headers (Host too) and returns the relay's answer. A
// 101 answer is closed at once.
func upgrade(t *testing.T, wsURL string, hdr http.Header) (status int, respHdr http.Header, body string) {
	t.Helper()
	u, err := url.Parse(wsURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Scheme = strings.Replace(u.Scheme, "ws", "http", 1)
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", base64.StdEncoding.EncodeToString(key))
	for k, vs := range hdr {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if h := hdr.Get("Host"); h != "" {
		req.Host = h // net/http sends req.Host, never a Host in Header
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("upgrade request: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		body = string(b)
	}
	return resp.StatusCode, resp.Header, body
}

// TestAuth runs the relay binary with a token (from PILOTDESK_TOKEN) and
// tries to get in every wrong way docs/protocol.md (Auth) names: each is answered
// HTTP 401 (403 for a cross-origin browser) and no WebSocket is opened. The
// right token, in the header or the query, gets in. No token, right or
// wrong, appears in the relay's log, even at debug level.
func TestAuth(t *testing.T) {
	t.Parallel()
	const token = "auth-test-0123456789abcdef0123456789abcdef"
	p := startRelay(t, []string{"PILOTDESK_TOKEN=" + token},
		"--agent", "script", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--verbose")

	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	wrong := []string{
		"auth-test-0123456789abcdef0123456789abcdeX", // same length, last byte differs
		"wrong-token",           // shorter
		token[:len(token)-1],    // a prefix of the right one
		token + "0",             // longer, starts with the right one
		strings.ToUpper(token),  // tokens are case-sensitive
		"auth-test-" + "\u00e9", // not ASCII
	}
	refused := []struct {
		name string
		url  string
		hdr  http.Header
		code int
	}{
		{"no token", p.URL, nil, http.StatusUnauthorized},
		{"empty bearer", p.URL, http.Header{"Authorization": {"Bearer "}}, http.StatusUnauthorized},
		{"basic auth with the token", p.URL, http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+token))}}, http.StatusUnauthorized},
		{"token without a scheme", p.URL, http.Header{"Authorization": {token}}, http.StatusUnauthorized},
		{"wrong token in the query", relaytest.WithToken(p.URL, wrong[0]), nil, http.StatusUnauthorized},
		{"empty token in the query", p.URL + "?token=", nil, http.StatusUnauthorized},
		{"token in another query parameter", p.URL + "?access_token=" + token, nil, http.StatusUnauthorized},
		{"cross-origin browser with the token", p.URL, http.Header{"Authorization": {"Bearer " + token}, "Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"cross-origin browser with the token in the query", relaytest.WithToken(p.URL, token), http.Header{"Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"cross-origin https page on the same host name", p.URL, http.Header{"Authorization": {"Bearer " + token}, "Origin": {"https://127.0.0.1.evil.example"}}, http.StatusForbidden},
	}
	for i, tok := range wrong {
		refused = append(refused, struct {
			name string
			url  string
			hdr  http.Header
			code int
		}{"wrong token " + string(rune('a'+i)), p.URL, bearer(tok), http.StatusUnauthorized})
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			status, hdr, body := upgrade(t, tc.url, tc.hdr)
			if status != tc.code {
				t.Fatalf("status %d, want %d (body %q)", status, tc.code, body)
			}
			if hdr.Get("Upgrade") != "" || hdr.Get("Sec-WebSocket-Accept") != "" {
				t.Errorf("a refused request got WebSocket headers: %v", hdr)
			}
			if tc.code == http.StatusUnauthorized && !strings.Contains(body, "token") {
				t.Errorf("the 401 does not say what is missing: %q", body)
			}
			if tc.code == http.StatusUnauthorized && !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("the 401 has no WWW-Authenticate: Bearer header: %v", hdr)
			}
			// The library's client sees the same refusal.
			conn, resp, err := dialWS(tc.url, tc.hdr, nil)
			if err == nil {
				conn.CloseNow()
				t.Fatal("websocket.Dial succeeded")
			}
			if resp == nil || resp.StatusCode != tc.code {
				t.Errorf("websocket.Dial: %v, want HTTP %d", err, tc.code)
			}
		})
	}

	accepted := []struct {
		name string
		url  string
		hdr  http.Header
	}{
		{"bearer token", p.URL, bearer(token)},
		{"bearer scheme in lower case", p.URL, http.Header{"Authorization": {"bearer " + token}}},
		{"token in the query", relaytest.WithToken(p.URL, token), nil},
		{"same-origin browser", p.URL, http.Header{"Authorization": {"Bearer " + token}, "Origin": {"http://" + p.Addr}}},
		{"non-browser client (no Origin)", p.URL, bearer(token)},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			conn, _, err := dialWS(tc.url, tc.hdr, nil)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer conn.CloseNow()
			pingPong(t, conn)
		})
	}

	// /healthz needs no token (it says nothing but "ok").
	resp, err := http.Get("http://" + p.Addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}

	p.stop()
	checkNoSecrets(t, p.log.String(), append([]string{token}, wrong...)...)
}

// checkNoSecrets fails if any of secrets is in log.
func checkNoSecrets(t *testing.T, log string, secrets ...string) {
	t.Helper()
	if log == "" {
		t.Fatal("the relay logged nothing: the token check below would prove nothing")
	}
	for _, s := range secrets {
		if strings.Contains(log, s) {
			t.Errorf("the token %q appears in the relay's log:\n%s", s, log)
		}
	}
	if strings.Contains(log, "token=") {
		t.Errorf("a token= query appears in the relay's log:\n%s", log)
	}
}

// dialWS opens a WebSocket with coder/websocket's client.
func dialWS(wsURL string, hdr http.Header, client *http.Client) (*websocket.Conn, *http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: hdr, HTTPClient: client})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	return conn, resp, err
}

// pingPong checks a raw connection works: a ping gets a pong.
func pingPong(t *testing.T, conn *websocket.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"ping"}`)); err != nil {
		t.Fatalf("write ping: %v", err)
	}
	_, msg, err := conn.Read(ctx)
	if err != nil {
		t.Fatalf("read pong: %v", err)
	}
	if string(msg) != `{"type":"pong"}` {
		t.Fatalf("got %s, want a pong", msg)
	}
}

// TestNonLoopbackListen: `serve` refuses a non-loopback address without a
// token (exit 2 and a clear message); with --insecure-no-auth, or with a
// token, it starts. Connections go to 127.0.0.1 only.
func TestNonLoopbackListen(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", "relay.example:0"} {
		proc := launchRelay(t, nil, "--listen", addr, "--agent", "script", "--data-dir", ":memory:")
		if code := proc.exitCode(); code != 2 {
			t.Errorf("serve --listen %s without a token exited %d, want 2; log:\n%s", addr, code, proc.log.String())
		}
		want := "refusing to listen on " + addr + " without a token"
		if log := proc.log.String(); !strings.Contains(log, want) || !strings.Contains(log, "--insecure-no-auth") {
			t.Errorf("serve --listen %s: the message does not say %q and how to override it:\n%s", addr, want, log)
		}
	}

	open := startRelay(t, nil, "--listen", "0.0.0.0:0", "--insecure-no-auth", "--agent", "script", "--data-dir", ":memory:")
	if !strings.Contains(open.log.String(), "RUNNING WITHOUT AUTHENTICATION") || !strings.Contains(open.log.String(), "anyone who can reach 0.0.0.0:0") {
		t.Errorf("--insecure-no-auth on 0.0.0.0 without a loud warning:\n%s", open.log.String())
	}
	port := open.Addr[strings.LastIndex(open.Addr, ":")+1:]
	conn, _, err := dialWS("ws://127.0.0.1:"+port+"/ws", nil, nil)
	if err != nil {
		t.Fatalf("--insecure-no-auth: dial without a token: %v", err)
	}
	pingPong(t, conn)
	conn.CloseNow()

	if status, _, body := upgrade(t, "ws://127.0.0.1:"+port+"/ws", http.Header{"Authorization": {"Bearer some-token"}}); status != http.StatusUnauthorized {
		t.Errorf("--insecure-no-auth, a token it cannot check: %d %q, want 401", status, body)
	}
	open.stop()

	short := startRelay(t, nil, "--listen", "127.0.0.1:0", "--token", "abc", "--agent", "script", "--data-dir", ":memory:")
	if log := short.log.String(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, "easy to guess") {
		t.Errorf("--token abc: no warning:\n%s", log)
	}
	short.stop()
	// On the network a short token is refused, not warned of.
	shortOut := launchRelay(t, nil, "--listen", "0.0.0.0:0", "--token", "abc", "--agent", "script", "--data-dir", ":memory:")
	if code := shortOut.exitCode(); code != 2 || !strings.Contains(shortOut.log.String(), "refusing to listen on 0.0.0.0:0 with a token of 3 characters") {
		t.Errorf("--listen 0.0.0.0:0 --token abc exited %d, want 2 and a refusal; log:\n%s", code, shortOut.log.String())
	}

	const token = "non-loopback-token-31415926"
	guarded := startRelay(t, nil, "--listen", "0.0.0.0:0", "--token", token, "--agent", "script", "--data-dir", ":memory:")
	port = guarded.Addr[strings.LastIndex(guarded.Addr, ":")+1:]
	if status, _, body := upgrade(t, "ws://127.0.0.1:"+port+"/ws", nil); status != http.StatusUnauthorized {
		t.Errorf("0.0.0.0 with a token, no token given: %d %q", status, body)
	}
	conn, _, err = dialWS("ws://127.0.0.1:"+port+"/ws", http.Header{"Authorization": {"Bearer " + token}}, nil)
	if err != nil {
		t.Fatalf("0.0.0.0 with a token: %v", err)
	}
	pingPong(t, conn)
	conn.CloseNow()
	guarded.stop()
	checkNoSecrets(t, guarded.log.String(), token)
}

// TestDNSRebindingReal: a web page of evil.example whose name was made to
// resolve to 127.0.0.1 reaches `serve --listen 127.0.0.1:P` with Host and
// Origin evil.example:P. Without a token (allowed on loopback) that used to
// be a WebSocket on which the page could run the agent's tools; now only a
// loopback Host is answered, with a token too. The same page on the relay's
// own loopback origin (the web client) still gets in.
func TestDNSRebindingReal(t *testing.T) {
	t.Parallel()
	const token = "rebinding-token-57721566"
	for _, withToken := range []bool{false, true} {
		args := []string{"--listen", "127.0.0.1:0", "--agent", "script", "--data-dir", ":memory:"}
		auth := http.Header{}
		if withToken {
			args = append(args, "--token", token)
			auth.Set("Authorization", "Bearer "+token)
		} else {
			args = append(args, "--insecure-no-auth") // the only relay without a token
		}
		p := startRelay(t, nil, args...)
		port := p.Addr[strings.LastIndex(p.Addr, ":")+1:]
		for _, tc := range []struct {
			host, origin string
			want         int
		}{
			{"evil.example:" + port, "http://evil.example:" + port, http.StatusForbidden},
			{"evil.example:" + port, "", http.StatusForbidden},
			{"127.0.0.1.nip.io:" + port, "http://127.0.0.1.nip.io:" + port, http.StatusForbidden},
			{"127.0.0.1:" + port, "http://127.0.0.1:" + port, http.StatusSwitchingProtocols},
			{"localhost:" + port, "", http.StatusSwitchingProtocols},
		} {
			hdr := auth.Clone()
			hdr.Set("Host", tc.host)
			if tc.origin != "" {
				hdr.Set("Origin", tc.origin)
			}
			status, _, body := upgrade(t, p.URL, hdr)
			if status != tc.want {
				t.Errorf("token %v, Host %s, Origin %q: %d %q, want %d", withToken, tc.host, tc.origin, status, body, tc.want)
			}
			if status == http.StatusForbidden && !strings.Contains(body, "loopback") {
				t.Errorf("Host %s: the refusal does not say why: %q", tc.host, body)
			}
		}
		p.stop()
	}
}

// TestTLS serves wss:// with a self-signed certificate made here: a client
// that trusts it talks to the relay (auth still applies); one that does not,
// or that speaks plain ws://, gets nothing.
func TestTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile, pool := selfSignedCert(t, dir)
	const token = "tls-test-token-27182818"
	echo := writeScript(t, map[string]any{"turns": []any{map[string]any{"steps": []any{map[string]any{"delta": "Echo: {{prompt}}"}}}}})
	p := startRelay(t, nil, "--agent", "script", "--script", echo, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--token", token, "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(p.URL, "wss://") {
		t.Fatalf("the relay announces %s, want wss://", p.URL)
	}
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	auth := http.Header{"Authorization": {"Bearer " + token}}

	conn, _, err := dialWS(p.URL, auth, trusting)
	if err != nil {
		t.Fatalf("wss:// with the certificate trusted: %v", err)
	}
	pingPong(t, conn)
	// A whole turn over TLS.
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	id := uuid.NewString()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"copilot:send","data":{"conversationId":"`+id+`","prompt":"hello over TLS"}}`)); err != nil {
		t.Fatal(err)
	}
	echoed := false
	for {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("reading the turn over TLS: %v", err)
		}
		echoed = echoed || strings.Contains(string(msg), `"content":"Echo: hello over TLS"`)
		if strings.Contains(string(msg), `"type":"copilot:idle"`) {
			break
		}
	}
	if !echoed {
		t.Error("the turn over TLS ended without the echo")
	}
	conn.CloseNow()

	if _, resp, err := dialWS(p.URL, nil, trusting); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wss:// without the token: %v, want HTTP 401", err)
	}
	_, _, err = dialWS(p.URL, auth, &http.Client{Transport: &http.Transport{}})
	var unknownCA x509.UnknownAuthorityError
	if !errors.As(err, &unknownCA) {
		t.Errorf("a client that does not trust the certificate: %v, want an unknown-authority error", err)
	}
	if _, _, err := dialWS("ws://"+p.Addr+"/ws", auth, nil); err == nil {
		t.Error("plain ws:// to the TLS port succeeded")
	}
	p.stop()
	checkNoSecrets(t, p.log.String(), token)
}

// selfSignedCert writes a self-signed ECDSA certificate for 127.0.0.1 and
// localhost, and returns its files and a pool that trusts it.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "pilotdesk test relay"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
