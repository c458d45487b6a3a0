package cli

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pilotdesk/pilotdesk/internal/ownerfile"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

func writePrivate(path string, b []byte) error {
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// WriteFile keeps the mode of a file that was there: restrict it anyway.
	return ownerfile.Restrict(path)
}

// lanAddresses are this machine's addresses that other devices may reach
// and the local CA may vouch for: up, private (privateNets), not loopback
// nor link-local; IPv4 first, as the one a phone on the same Wi-Fi reaches,
// the private ranges before the shared one of carrier NAT (Tailscale's).
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
			if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() || !isPrivate(ipn.IP) {
				continue
			}
			out = append(out, ipn.IP)
		}
	}
	rank := func(ip net.IP) int {
		switch {
		case ip.To4() == nil:
			return 2
		case ip.IsPrivate():
			return 0
		}
		return 1
	}
	slices.SortStableFunc(out, func(a, b net.IP) int { return rank(a) - rank(b) })
	return out
}

// fingerprint is the SHA-256 of a certificate, hex, as devices pin it.
func fingerprint(cert tls.Certificate) string {
	if len(cert.Certificate) == 0 {
		return ""
	}
	return certFingerprint(cert.Certificate[0])
}

// certName is the host name a served certificate is for, the first of its
// names that is neither a wildcard nor localhost; "" when it has none.
func certName(cert tls.Certificate) string {
	if len(cert.Certificate) == 0 {
		return ""
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return ""
	}
	for _, n := range leaf.DNSNames {
		if !strings.Contains(n, "*") && n != "localhost" {
			return n
		}
	}
	return ""
}

// certFingerprint is the SHA-256 of a certificate's DER, hex.
func certFingerprint(der []byte) string {
	sum := sha256.Sum256(der)
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
// one. A relay without a data dir takes a new port each time. taken says
// why the remembered port was not free; the caller warns of it only once
// its relay did start on the new port (the Connect a device dialog shows
// the new link): the usual holder of the port is the relay of another
// pilotdesk on the same data dir, which a window or a chat then attaches
// to, keeping the port, so a warning given here would be false.
func stableListen(dir, host, name string, logger *slog.Logger) (listen string, taken error) {
	fresh := net.JoinHostPort(host, "0")
	if dir == memoryDataDir {
		return fresh, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return fresh, nil
	}
	port, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || port <= 0 || port > 65535 {
		logger.Warn("ignoring the remembered port of the relay", "file", filepath.Join(dir, name))
		return fresh, nil
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	// A probe: the stack would fail on a port in use, after opening the
	// store and starting the agent. Go's listeners set SO_REUSEADDR, so
	// the port can be bound again at once after this close.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fresh, fmt.Errorf("port %d: %w", port, err)
	}
	ln.Close()
	return addr, nil
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
