package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// "Reachable from my network": the embedded relay listens on every
// address with TLS and a certificate its local CA issued, made once in the data dir
// (the same fingerprint on the next start); the window's client pins it,
// a client that does not trust it is refused; the Share dialog gets the
// LAN address and the fingerprint. Without a data dir it is refused.
func TestLANRelayHasItsOwnTLS(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cf := demoFlags(dir)
	cf.relay.LAN = true
	ctx := context.Background()
	tgt, stop, err := cf.startTarget(ctx, logger)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tgt.URL, "wss://127.0.0.1:") || len(tgt.Fingerprint) != 64 {
		t.Fatalf("target %+v", tgt)
	}
	dctx, cancel := context.WithTimeout(ctx, relaytest.Timeout)
	defer cancel()
	c, err := client.Config{URL: tgt.URL, Token: tgt.Token, HTTPClient: pinnedClient(tgt.Fingerprint)}.Dial(dctx)
	if err != nil {
		t.Fatalf("the pinned client: %v", err)
	}
	c.Close()
	if _, err := (client.Config{URL: tgt.URL, Token: tgt.Token}).Dial(dctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client that does not trust the certificate: %v", err)
	}
	if _, err := (client.Config{URL: tgt.URL, Token: tgt.Token, HTTPClient: pinnedClient(strings.Repeat("0", 64))}).Dial(dctx); err == nil {
		t.Fatal("a client pinning another certificate connected")
	}
	r, err := readRunning(dir)
	if err != nil || r.Fingerprint != tgt.Fingerprint || (tgt.lan != "" && r.LAN != tgt.lan) {
		t.Fatalf("running file %+v, %v", r, err)
	}
	share := newWindowDevices(tgt).Share()
	if tgt.lan != "" && (!share.LAN || share.URL != "wss://"+tgt.lan+"/ws" || share.SetupURL != "http://"+tgt.lan+"/" ||
		share.CAFingerprint != FormatFingerprint(r.CAFingerprint) || len(r.CAFingerprint) != 64) {
		t.Fatalf("share %+v", share)
	}
	stop()

	again, stop2, err := cf.startTarget(ctx, logger)
	if err != nil {
		t.Fatal(err)
	}
	stop2()
	if again.Fingerprint != tgt.Fingerprint {
		t.Fatal("the certificate changed between two starts")
	}
	cf.relay.DataDir = memoryDataDir
	if _, _, err := cf.startTarget(ctx, logger); err == nil {
		t.Fatal("a relay on the network without a data dir for its certificate")
	}
}

// The relay on the network keeps its port across restarts (the data dir
// remembers it), so a paired phone's link keeps working; a port another
// program took meanwhile is given up for a new one, which is remembered
// in its turn.
func TestLANRelayKeepsItsPort(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cf := demoFlags(dir)
	cf.relay.LAN = true
	ctx := context.Background()
	port := func() string {
		t.Helper()
		tgt, stop, err := cf.startTarget(ctx, logger)
		if err != nil {
			t.Fatal(err)
		}
		stop()
		_, p, err := net.SplitHostPort(hostOf(tgt.URL))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := port()
	if again := port(); again != first {
		t.Fatalf("the port changed from %s to %s across a restart", first, again)
	}
	taken, err := net.Listen("tcp", "0.0.0.0:"+first)
	if err != nil {
		t.Fatal(err)
	}
	other := port()
	taken.Close()
	if other == first {
		t.Fatal("started on a port another program holds")
	}
	if next := port(); next != other {
		t.Fatalf("the new port %s was not remembered: %s", other, next)
	}
}

// The plain-HTTP side of the relay on the network, on the port of its
// https address: the setup page and the local CA's certificate, exactly,
// and nothing else (no token, no API, no file of the data dir), while
// TLS on the same port is the relay, trusted by a client that trusts the
// CA alone, as a phone that installed it does.
func TestLANSetupPage(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	cf := demoFlags(dir)
	cf.relay.LAN = true
	tgt, stop, err := cf.startTarget(t.Context(), logger)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	hostPort := hostOf(tgt.URL) // 127.0.0.1:PORT
	if share := newWindowDevices(tgt).Share(); tgt.lan == "" && (share.Unreachable == "" || share.SetupURL != "") {
		t.Fatalf("no private address, and the dialog is not told: %+v", share)
	}
	ca, _, err := loadPair(filepath.Join(dir, lanCAName), filepath.Join(dir, lanCAKeyName))
	if err != nil {
		t.Fatal(err)
	}
	plain := &http.Client{Timeout: relaytest.Timeout}
	get := func(method, path string, header http.Header) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, "http://"+hostPort+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := plain.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}

	resp, body := get("GET", lanCAPath, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-x509-ca-cert" || !bytes.Equal(body, ca.Raw) {
		t.Fatalf("%s: %s %q, %d bytes, not the CA's %d", lanCAPath, resp.Status, resp.Header.Get("Content-Type"), len(body), len(ca.Raw))
	}
	resp, body = get("GET", "/", nil)
	page := string(body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, FormatFingerprint(certFingerprint(ca.Raw))) || !strings.Contains(page, ca.Subject.CommonName) ||
		!strings.Contains(page, "Certificate Trust Settings") || !strings.Contains(page, "Install a certificate") {
		t.Fatalf("the setup page: %s\n%s", resp.Status, page)
	}
	if strings.Contains(page, tgt.Token) || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatal("the setup page holds the owner's token, or has no content policy")
	}
	owner := http.Header{"Authorization": {"Bearer " + tgt.Token}, "Connection": {"Upgrade"}, "Upgrade": {"websocket"},
		"Sec-Websocket-Version": {"13"}, "Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}}
	for _, path := range []string{"/ws", "/ws?token=" + tgt.Token, "/healthz", "/token", "/push/key", "/index.html", "/app.js",
		"/" + lanCAKeyName, "/" + lanKeyName, "/" + runningName, "/pilotdesk-ca.crt/x", "/../" + lanCAKeyName} {
		if resp, body := get("GET", path, owner); resp.StatusCode != http.StatusNotFound || bytes.Contains(body, []byte("PRIVATE")) {
			t.Errorf("GET %s in plain http: %s %q", path, resp.Status, body)
		}
	}
	if resp, _ := get("POST", "/push/subscribe", owner); resp.StatusCode == http.StatusOK || resp.StatusCode/100 == 1 {
		t.Errorf("POST /push/subscribe in plain http: %s", resp.Status)
	}

	// TLS on the same port: the relay, with a chain a client that trusts
	// the CA alone accepts, for the loopback and the network address.
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	trusting := &http.Client{Timeout: relaytest.Timeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	addrs := []string{hostPort}
	if tgt.lan != "" {
		addrs = append(addrs, tgt.lan)
	}
	for _, a := range addrs {
		resp, err := trusting.Get("https://" + a + "/healthz")
		if err != nil {
			t.Fatalf("https://%s with the CA trusted: %v", a, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("https://%s/healthz: %s", a, resp.Status)
		}
	}
}

// What the Connect a device… dialog is told: the https address, the setup
// page on its port and the CA's fingerprint for a relay with a private
// address; why no phone reaches one that has none; nothing for one on the
// loopback (the dialog says that itself).
func TestShareInfo(t *testing.T) {
	fp := strings.Repeat("ab", 32)
	got := shareInfo("wss://0.0.0.0:7421/ws", "192.168.1.20:7421", fp)
	if got.URL != "wss://192.168.1.20:7421/ws" || !got.LAN || got.SetupURL != "http://192.168.1.20:7421/" ||
		!strings.HasPrefix(got.CAFingerprint, "AB:AB:") || got.Unreachable != "" {
		t.Fatalf("with an address: %+v", got)
	}
	if got := shareInfo("wss://0.0.0.0:7421/ws", "", fp); got.LAN || got.SetupURL != "" || !strings.Contains(got.Unreachable, "no private network address") {
		t.Fatalf("without one: %+v", got)
	}
	if got := shareInfo("ws://127.0.0.1:7420/ws", "", ""); got.LAN || got.SetupURL != "" || got.Unreachable != "" {
		t.Fatalf("on the loopback: %+v", got)
	}
	if got := shareInfo("ws://192.168.1.20:7420/ws", "", ""); got.LAN || !strings.Contains(got.Unreachable, "without TLS") {
		t.Fatalf("on the network in clear: %+v", got)
	}
	r := runningRelay{URL: "wss://[fd7a:115c::5]:7420/ws", Name: "laptop.example-tailnet.ts.net"}
	if got := r.deviceURL(); got != "wss://laptop.example-tailnet.ts.net:7420/ws" {
		t.Fatalf("devices of a relay with a named certificate: %s", got)
	}
}

// serve --tls-cert with a certificate for a name (tailscale cert's
// laptop.tailnet.ts.net) that does not name the address it listens on:
// pilotdesk token create gives devices links with the name, and the
// clients of this user on this computer, which find the relay at its
// address in relay.json, pin the certificate and connect.
func TestServeNamedCertificate(t *testing.T) {
	dir, certDir := t.TempDir(), t.TempDir()
	ca, err := lanCertificate(certDir, slog.New(slog.DiscardHandler)) // a CA to issue the test's certificate
	if err != nil {
		t.Fatal(err)
	}
	_, caKey, err := loadPair(filepath.Join(certDir, lanCAName), filepath.Join(certDir, lanCAKeyName))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"*.laptop.local", "laptop.local"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.CA, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(certDir, "named.pem"), filepath.Join(certDir, "named-key.pem")
	if err := writeKeyPair(certPath, keyPath, der, key); err != nil {
		t.Fatal(err)
	}
	st := serveStack(t, "--listen", "127.0.0.1:0", "--token", "owner-token-0123456789", "--agent", "script", "--data-dir", dir,
		"--tls-cert", certPath, "--tls-key", keyPath)
	defer closeStack(t, st)
	r, err := readRunning(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(hostOf(r.URL))
	if r.Name != "laptop.local" || r.Fingerprint != certFingerprint(der) || r.deviceURL() != "wss://laptop.local:"+port+"/ws" {
		t.Fatalf("relay.json: %+v, devices at %s", r, r.deviceURL())
	}
	var out bytes.Buffer
	printNewToken(Env{Stdout: &out}, dir, "pdt_named", history.Device{Name: "Pixel", Role: "controller"})
	if !strings.Contains(out.String(), "https://laptop.local:"+port+"/#token=pdt_named") {
		t.Fatalf("token create:\n%s", out.String())
	}
	ctx, cancel := context.WithTimeout(t.Context(), relaytest.Timeout)
	defer cancel()
	c, err := client.Config{URL: r.URL, Token: r.Token, HTTPClient: pinnedClient(r.Fingerprint)}.Dial(ctx)
	if err != nil {
		t.Fatalf("a client of this computer on %s: %v", r.URL, err)
	}
	c.Close()
	if got := shareInfo(r.deviceURL(), r.LAN, r.CAFingerprint); !got.LAN || got.URL != "wss://laptop.local:"+port+"/ws" || got.SetupURL != "" || got.Unreachable != "" {
		t.Fatalf("the dialog of a window attached to it: %+v", got)
	}
}

// pilotdesk token create beside the window's relay reachable from the
// network: the https link, and the setup page's link for a phone's first
// time.
func TestTokenCreateSetupLink(t *testing.T) {
	dir := t.TempDir()
	if _, err := writeRunning(dir, runningRelay{URL: "wss://127.0.0.1:7421/ws", Token: "owner", PID: os.Getpid(), LAN: "192.168.1.20:7421",
		Fingerprint: strings.Repeat("1", 64), CAFingerprint: strings.Repeat("2", 64)}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printNewToken(Env{Stdout: &out}, dir, "pdt_x", history.Device{Name: "Pixel", Role: "controller"})
	for _, want := range []string{"In a browser or on a phone: https://192.168.1.20:7421/#token=pdt_x\n",
		"A phone's first time:       http://192.168.1.20:7421/#token=pdt_x\n",
		"pilotdesk chat --connect wss://192.168.1.20:7421/ws --token pdt_x\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("token create does not say %q:\n%s", want, out.String())
		}
	}
}
