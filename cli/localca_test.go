package cli

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The local CA is made once in the data dir, owner-only, and kept across
// starts with the relay's certificate it issued; that certificate names
// the loopback and every private address of this computer and chains to
// the CA, which vouches for private addresses and local names only.
func TestLocalCAMadeOnceAndKept(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	first, err := lanCertificate(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	ca := first.CA
	if !ca.IsCA || !ca.MaxPathLenZero || !strings.HasPrefix(ca.Subject.CommonName, "pilotdesk local CA on ") {
		t.Fatalf("CA: IsCA %v, MaxPathLenZero %v, name %q", ca.IsCA, ca.MaxPathLenZero, ca.Subject.CommonName)
	}
	if _, ok := ca.PublicKey.(*ecdsa.PublicKey); !ok || ca.PublicKey.(*ecdsa.PublicKey).Curve != elliptic.P256() {
		t.Fatalf("CA key %T", ca.PublicKey)
	}
	if !ca.PermittedDNSDomainsCritical || strings.Join(ca.PermittedDNSDomains, ",") != "localhost,local" || len(ca.PermittedIPRanges) == 0 {
		t.Fatalf("CA constraints: critical %v, names %v, addresses %v", ca.PermittedDNSDomainsCritical, ca.PermittedDNSDomains, ca.PermittedIPRanges)
	}
	if runtime.GOOS != "windows" {
		for _, name := range []string{lanCAName, lanCAKeyName, lanCertName, lanKeyName} {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("%s: %v, %v", name, fi.Mode(), err)
			}
		}
	}

	leaf, err := x509.ParseCertificate(first.Cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	names := []string{"localhost", "127.0.0.1", "::1"}
	for _, ip := range lanAddresses() {
		names = append(names, ip.String())
	}
	if label := hostLabel(); label != "" {
		names = append(names, label+".local")
	}
	for _, name := range names {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("the relay's certificate for %s: %v", name, err)
		}
	}
	if leaf.NotAfter.Sub(leaf.NotBefore) > 398*24*time.Hour {
		t.Errorf("the relay's certificate lives %v, more than browsers accept", leaf.NotAfter.Sub(leaf.NotBefore))
	}

	again, err := lanCertificate(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.CA.Raw, ca.Raw) || fingerprint(again.Cert) != fingerprint(first.Cert) {
		t.Fatal("the CA or the relay's certificate changed between two starts")
	}

	_, caKey, err := loadPair(filepath.Join(dir, lanCAName), filepath.Join(dir, lanCAKeyName))
	if err != nil {
		t.Fatal(err)
	}
	// The addresses of a computer on a Wi-Fi, a company network, Tailscale
	// and an IPv6 home network: the certificate the CA issues for them
	// verifies for each (this test machine may have none of them).
	addrs := []net.IP{net.ParseIP("192.168.1.20"), net.ParseIP("10.1.2.3"), net.ParseIP("172.20.0.4"), net.ParseIP("100.101.102.103"), net.ParseIP("fd12::5")}
	certPath, keyPath := filepath.Join(t.TempDir(), "cert.pem"), filepath.Join(t.TempDir(), "key.pem")
	if err := issueLeaf(certPath, keyPath, ca, caKey, addrs); err != nil {
		t.Fatal(err)
	}
	issued, _, err := loadPair(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range addrs {
		if _, err := issued.Verify(x509.VerifyOptions{Roots: roots, DNSName: ip.String()}); err != nil {
			t.Errorf("the relay's certificate for %s: %v", ip, err)
		}
	}

	// The CA's key cannot vouch for a site of the internet: a certificate
	// it signs for one does not verify.
	for _, name := range []string{"example.com", "8.8.8.8", "2001:4860:4860::8888"} {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		if ip := net.ParseIP(name); ip != nil {
			tmpl.IPAddresses = []net.IP{ip}
		} else {
			tmpl.DNSNames = []string{name}
		}
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		forged, _ := x509.ParseCertificate(der)
		_, err = forged.Verify(x509.VerifyOptions{Roots: roots, DNSName: name})
		var invalid x509.CertificateInvalidError
		if !errors.As(err, &invalid) || invalid.Reason != x509.CANotAuthorizedForThisName {
			t.Errorf("a certificate for %s signed by the local CA: %v", name, err)
		}
	}
}

// The relay's certificate is issued again when it no longer fits: near
// its end, or without an address this computer has now; the CA stays.
func TestLeafUnfit(t *testing.T) {
	dir := t.TempDir()
	l, err := lanCertificate(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(l.Cert.Certificate[0])
	now := time.Now()
	if why := leafUnfit(leaf, l.CA, lanAddresses(), now); why != "" {
		t.Fatalf("a fresh certificate is unfit: %s", why)
	}
	if why := leafUnfit(leaf, l.CA, nil, leaf.NotAfter.Add(-10*24*time.Hour)); !strings.Contains(why, "it ends on") {
		t.Fatalf("ten days before its end: %q", why)
	}
	if why := leafUnfit(leaf, l.CA, []net.IP{net.ParseIP("192.168.77.5")}, now); !strings.Contains(why, "192.168.77.5") {
		t.Fatalf("a new address: %q", why)
	}
}

// A data dir of an older pilotdesk holds a self-signed certificate: it is
// replaced by one the new CA issues, and the log says what the phones that
// accepted the old one must do; so it does when the CA itself is new.
func TestSelfSignedCertificateReplaced(t *testing.T) {
	dir := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pilotdesk relay old"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(10, 0, 0),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeKeyPair(filepath.Join(dir, lanCertName), filepath.Join(dir, lanKeyName), der, key); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	l, err := lanCertificate(dir, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(l.Cert.Certificate[0])
	if bytes.Equal(leaf.Raw, der) || leaf.CheckSignatureFrom(l.CA) != nil {
		t.Fatal("the self-signed certificate was kept")
	}
	if !strings.Contains(log.String(), "a phone that accepted the old self-signed certificate's warning must open the link of Connect a device") {
		t.Fatalf("log: %s", log.String())
	}
	// The CA moved away: a new one is made, and the log says that phones
	// must install it.
	if err := os.Rename(filepath.Join(dir, lanCAName), filepath.Join(dir, "old-ca.pem")); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	renewed, err := lanCertificate(dir, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(renewed.CA.Raw, l.CA.Raw) || !strings.Contains(log.String(), "phones that trusted the old one must install this one") {
		t.Fatalf("a new CA: same %v, log: %s", bytes.Equal(renewed.CA.Raw, l.CA.Raw), log.String())
	}
	// The server's chain a client that trusts the CA accepts.
	pool := x509.NewCertPool()
	pool.AddCert(l.CA)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
}
