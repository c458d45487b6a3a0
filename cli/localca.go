package cli

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The local certificate authority of a relay reachable from the network
// (Settings' "Reachable from my network"): made once in the data dir and
// kept there owner-only. A phone installs its certificate once (the setup
// page, lansetup.go, offers it); from then on the relay's own certificate,
// which it issues and renews, is trusted without a warning or a
// fingerprint to compare. Its name constraints let it vouch only for
// private addresses and local names, so a phone that trusts it can be
// fooled by it about no site of the internet, even if its key leaked.
const (
	lanCAName    = "lan-ca.pem"
	lanCAKeyName = "lan-ca-key.pem"
	// The relay's certificate, issued by the CA.
	lanCertName = "lan-cert.pem"
	lanKeyName  = "lan-key.pem"
)

// The life of the relay's certificate: under the 398 days that Apple and
// Chrome allow a server certificate, renewed a month before its end.
const (
	leafLife  = 397 * 24 * time.Hour
	leafRenew = 30 * 24 * time.Hour
)

// privateNets are the addresses the local CA may vouch for: the private
// IPv4 ranges (RFC 1918), the shared range of carrier NAT that Tailscale
// uses (RFC 6598), IPv6 unique local addresses, and the loopback.
func privateNets() []*net.IPNet {
	v4 := func(a, b byte, bits int) *net.IPNet {
		return &net.IPNet{IP: net.IPv4(a, b, 0, 0).To4(), Mask: net.CIDRMask(bits, 32)}
	}
	ula := &net.IPNet{IP: net.ParseIP("fc00::"), Mask: net.CIDRMask(7, 128)}
	loop6 := &net.IPNet{IP: net.IPv6loopback, Mask: net.CIDRMask(128, 128)}
	return []*net.IPNet{v4(10, 0, 8), v4(172, 16, 12), v4(192, 168, 16), v4(100, 64, 10), ula, v4(127, 0, 8), loop6}
}

// caDNSDomains are the names the local CA may vouch for: localhost and
// the .local names of multicast DNS.
func caDNSDomains() []string { return []string{"localhost", "local"} }

func isPrivate(ip net.IP) bool {
	for _, n := range privateNets() {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// lanTLS is what a relay reachable from the network serves with: its
// certificate, issued by the local CA, and the CA's certificate, which
// phones install.
type lanTLS struct {
	Cert tls.Certificate
	CA   *x509.Certificate
}

// CAFingerprint is the SHA-256 of the CA's certificate, hex.
func (l *lanTLS) CAFingerprint() string { return certFingerprint(l.CA.Raw) }

// localCA loads the data dir's certificate authority, making it the first
// time.
func localCA(dir string) (*x509.Certificate, crypto.Signer, error) {
	certPath, keyPath := filepath.Join(dir, lanCAName), filepath.Join(dir, lanCAKeyName)
	ca, key, err := loadPair(certPath, keyPath)
	if err == nil {
		if !ca.IsCA {
			return nil, nil, fmt.Errorf("%s is not a certificate authority (move it and %s away to make a new one)", certPath, keyPath)
		}
		return ca, key, nil
	}
	if _, serr := os.Stat(certPath); !errors.Is(serr, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("loading the local certificate authority %s: %w (move it and %s away to make a new one; phones must then install the new one)", certPath, err, keyPath)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("making the local certificate authority's key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "this computer"
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "pilotdesk local CA on " + host, Organization: []string{"pilotdesk"}},
		NotBefore:    time.Now().Add(-time.Hour),
		// Installed once on each phone: long-lived.
		NotAfter:              time.Now().AddDate(20, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		// Critical, as RFC 5280 wants name constraints: a verifier that
		// does not understand them must refuse the CA, not ignore them.
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         caDNSDomains(),
		PermittedIPRanges:           privateNets(),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("making the local certificate authority: %w", err)
	}
	if err := writeKeyPair(certPath, keyPath, der, caKey); err != nil {
		return nil, nil, err
	}
	return loadPair(certPath, keyPath)
}

// lanCertificate is the relay's certificate for the network, issued by
// the data dir's local CA: the one in the data dir while it still fits
// (issued by this CA, naming every private address this computer has now,
// a month or more before its end), else a new one. An older pilotdesk's
// self-signed certificate is replaced, and the log says what the devices
// that accepted it must do.
func lanCertificate(dir string, logger *slog.Logger) (*lanTLS, error) {
	ca, caKey, err := localCA(dir)
	if err != nil {
		return nil, err
	}
	certPath, keyPath := filepath.Join(dir, lanCertName), filepath.Join(dir, lanKeyName)
	addrs := lanAddresses()
	leaf, _, err := loadPair(certPath, keyPath)
	switch {
	case err == nil:
		why := leafUnfit(leaf, ca, addrs, time.Now())
		if why == "" {
			pair, err := tls.LoadX509KeyPair(certPath, keyPath)
			if err != nil {
				return nil, fmt.Errorf("loading the relay's certificate: %w", err)
			}
			return &lanTLS{Cert: pair, CA: ca}, nil
		}
		switch {
		case selfSigned(leaf):
			logger.Warn("the relay's certificate is now issued by its local certificate authority: a phone that accepted the old self-signed certificate's warning must open the link of Connect a device… again (its page installs the authority once)", "why", why)
		case leaf.CheckSignatureFrom(ca) != nil:
			logger.Warn("the relay's certificate was issued by another certificate authority than the data dir's (was "+lanCAName+" replaced?): phones that trusted the old one must install this one from the page of Connect a device…'s code", "why", why)
		default:
			logger.Info("issuing the relay a new certificate", "why", why)
		}
	case !errors.Is(err, fs.ErrNotExist):
		logger.Warn("the relay's certificate could not be read: issuing a new one", "file", certPath, "err", err)
	}
	if err := issueLeaf(certPath, keyPath, ca, caKey, addrs); err != nil {
		return nil, err
	}
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("loading the relay's certificate: %w", err)
	}
	return &lanTLS{Cert: pair, CA: ca}, nil
}

// leafUnfit says why the relay's certificate must be issued again, "" if
// it need not.
func leafUnfit(leaf, ca *x509.Certificate, addrs []net.IP, now time.Time) string {
	if leaf.CheckSignatureFrom(ca) != nil {
		return "it was not issued by the local certificate authority"
	}
	if now.Add(leafRenew).After(leaf.NotAfter) {
		return "it ends on " + leaf.NotAfter.Format(time.DateOnly)
	}
	for _, ip := range addrs {
		if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
			return "it does not name the address " + ip.String()
		}
	}
	return ""
}

// selfSigned: an older pilotdesk's certificate, signed with its own key
// (not a CA's: CheckSignatureFrom would refuse it as a parent).
func selfSigned(c *x509.Certificate) bool {
	return bytes.Equal(c.RawIssuer, c.RawSubject) && c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil
}

func issueLeaf(certPath, keyPath string, ca *x509.Certificate, caKey crypto.Signer, addrs []net.IP) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("making the relay's key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		// No common name: verifiers read the names below, and a common
		// name that is not one of them could fall foul of the CA's name
		// constraints with older ones.
		Subject:     pkix.Name{Organization: []string{"pilotdesk"}},
		NotBefore:   time.Now().Add(-time.Hour),
		NotAfter:    time.Now().Add(leafLife),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: append([]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, addrs...),
	}
	if label := hostLabel(); label != "" {
		tmpl.DNSNames = append(tmpl.DNSNames, label+".local")
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("issuing the relay's certificate: %w", err)
	}
	return writeKeyPair(certPath, keyPath, der, key)
}

// hostLabel is this computer's name as a DNS label (the first of its
// host name, lower case), "" when it is not one.
func hostLabel() string {
	host, err := os.Hostname()
	if err != nil {
		return ""
	}
	label := strings.ToLower(strings.SplitN(host, ".", 2)[0])
	if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
		return ""
	}
	for _, r := range label {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return ""
		}
	}
	return label
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("making a certificate's serial number: %w", err)
	}
	return n, nil
}

// loadPair loads a certificate and its key.
func loadPair(certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", certPath, err)
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("the key in %s cannot sign", keyPath)
	}
	return cert, key, nil
}

// writeKeyPair writes a certificate and its key, owner-only, the key
// first: a certificate without its key is an error at the next load.
func writeKeyPair(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding the key of %s: %w", certPath, err)
	}
	if err := writePrivate(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})); err != nil {
		return err
	}
	return writePrivate(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
