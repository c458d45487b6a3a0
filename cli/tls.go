package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/ownerfile"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// The self-signed certificate of a relay reachable from the network
// (Settings' "reachable from my network"): made once, kept in the data dir,
// so that its fingerprint, which a device pins, stays the same.
const (
	lanCertName = "lan-cert.pem"
	lanKeyName  = "lan-key.pem"
)

// lanCertificate loads the data dir's certificate, making it the first
// time. It names this machine's host name, its addresses and the loopback.
func lanCertificate(dir string) (tls.Certificate, error) {
	certPath, keyPath := filepath.Join(dir, lanCertName), filepath.Join(dir, lanKeyName)
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err == nil {
		return cert, nil
	}
	if _, serr := os.Stat(certPath); !errors.Is(serr, fs.ErrNotExist) {
		return tls.Certificate{}, fmt.Errorf("loading the relay's certificate %s: %w (move it and %s away to make a new one; devices must then accept the new fingerprint)", certPath, err, keyPath)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("making the relay's key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("making the relay's certificate: %w", err)
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "pilotdesk relay " + host, Organization: []string{"pilotdesk"}},
		NotBefore:    time.Now().Add(-time.Hour),
		// Long-lived: devices pin its fingerprint, not a chain.
		NotAfter:    time.Now().AddDate(10, 0, 0),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if host != "" {
		tmpl.DNSNames = append(tmpl.DNSNames, host, host+".local")
	}
	tmpl.IPAddresses = append(tmpl.IPAddresses, lanAddresses()...)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("making the relay's certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("making the relay's key: %w", err)
	}
	if err := writePrivate(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})); err != nil {
		return tls.Certificate{}, err
	}
	if err := writePrivate(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})); err != nil {
		return tls.Certificate{}, err
	}
	return tls.LoadX509KeyPair(certPath, keyPath)
}

func writePrivate(path string, b []byte) error {
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// WriteFile keeps the mode of a file that was there: restrict it anyway.
	return ownerfile.Restrict(path)
}

// lanAddresses are this machine's addresses that other devices may reach:
// up, not loopback, not link-local.
func lanAddresses() []net.IP {
	var out []net.IP
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
				continue
			}
			out = append(out, ipn.IP)
		}
	}
	return out
}

// fingerprint is the SHA-256 of a certificate, hex, as devices pin it.
func fingerprint(cert tls.Certificate) string {
	if len(cert.Certificate) == 0 {
		return ""
	}
	sum := sha256.Sum256(cert.Certificate[0])
	return hex.EncodeToString(sum[:])
}

// FormatFingerprint groups a hex fingerprint in pairs, AB:CD:…, as people
// compare them.
func FormatFingerprint(fp string) string {
	var b strings.Builder
	for i := 0; i < len(fp); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strings.ToUpper(fp[i:min(i+2, len(fp))]))
	}
	return b.String()
}

// pinnedClient is an HTTP client that accepts exactly the certificate
// with this fingerprint (a relay's self-signed one), or nil for the
// default verification when fp is "".
func pinnedClient(fp string) *http.Client {
	if fp == "" {
		return nil
	}
	want, err := hex.DecodeString(fp)
	if err != nil {
		want = nil // matches nothing
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain cannot be verified (self-signed); the pin replaces it.
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("the relay sent no certificate")
			}
			got := sha256.Sum256(raw[0])
			if len(want) != len(got) || subtle.ConstantTimeCompare(got[:], want) != 1 {
				return fmt.Errorf("the relay's certificate is not the one pinned (SHA-256 %s)", hex.EncodeToString(got[:]))
			}
			return nil
		},
	}}}
}

// refuseClearDevices refuses a relay that would listen beyond the loopback
// without TLS while its data dir holds device tokens: every upgrade would
// carry a device's token in clear to anyone on the network, and the
// devices are what the owner handed out to phones and other machines.
// The relay's own --token on such an address is the spec's business
// (docs/cli.md: it starts, as a relay behind a TLS-terminating proxy
// must); device tokens are ours, so we do not let them travel in clear.
func refuseClearDevices(ctx context.Context, s relaySettings, store history.Store) error {
	if s.TLSCert != "" || s.lanCert != nil || !relay.RequiresToken(s.Listen) {
		return nil
	}
	names, err := liveDeviceNames(ctx, s, store)
	if err != nil || len(names) == 0 {
		return err
	}
	return usageError("refusing to listen on %s without TLS: the device tokens of %s (%s) would travel in clear on the network. "+
		"Pass --tls-cert and --tls-key, listen on 127.0.0.1 (behind a proxy that does TLS), or revoke them with pilotdesk token revoke NAME",
		s.Listen, s.DataDir, strings.Join(names, ", "))
}

// errClearNetwork: `pilotdesk token create` for a relay that listens on
// the network without TLS.
func errClearNetwork(dir string) error {
	return usageError("the relay running on %s listens on the network without TLS: a device token would travel in clear. "+
		"Restart it with --tls-cert and --tls-key (or on 127.0.0.1), then make the token", dir)
}

// The files in the data dir that remember the embedded relay's port, one
// per address it listens on (the loopback's, and every address's when it
// is reachable from the network), so that a restart (a new start of the
// app, Settings → Apply) keeps it: the links of the web client a browser
// or a phone saved, and their QR codes, carry the port and keep working.
const (
	localPortName = "local-port"
	lanPortName   = "lan-port"
)

// stableListen is where the embedded relay listens on host: on the port
// the data dir's file name remembers when that port is free, else on a new
// one (logged; the Connect a device dialog shows the new link). A relay
// without a data dir takes a new port each time.
func stableListen(dir, host, name string, logger *slog.Logger) string {
	fresh := net.JoinHostPort(host, "0")
	if dir == memoryDataDir {
		return fresh
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return fresh
	}
	port, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || port <= 0 || port > 65535 {
		logger.Warn("ignoring the remembered port of the relay", "file", filepath.Join(dir, name))
		return fresh
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	// A probe: the stack would fail on a port in use, after opening the
	// store and starting the agent. Go's listeners set SO_REUSEADDR, so
	// the port can be bound again at once after this close.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		logger.Warn("the relay's port is taken; using a new one (saved links and paired devices need the new link)", "port", port, "err", err)
		return fresh
	}
	ln.Close()
	return addr
}

// rememberPort writes the port of relayURL (ws(s)://HOST:PORT/ws) to the
// data dir's file name for stableListen.
func rememberPort(dir, name, relayURL string, logger *slog.Logger) {
	if dir == memoryDataDir {
		return
	}
	_, port, err := net.SplitHostPort(hostOf(relayURL))
	if err == nil {
		err = writePrivate(filepath.Join(dir, name), []byte(port+"\n"))
	}
	if err != nil {
		logger.Warn("could not remember the relay's port: the next start may pick another", "err", err)
	}
}
