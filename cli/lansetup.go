package cli

import (
	"bytes"
	"crypto/x509"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"strings"
)

// The plain-HTTP side of a relay reachable from the network (portMux): a
// page that helps a phone trust the local CA (localca.go) and the CA's
// certificate, nothing else. No token, no API: everything else is 404.
// The QR code of Connect a device… opens this page with the device's
// token in the fragment, which the browser never sends; the page carries
// it on to the https address, at once when the phone trusts the CA.

// lanCAPath is where the plain side serves the CA's certificate.
const lanCAPath = "/pilotdesk-ca.crt"

//go:embed lansetup.html
var lanSetupPage string

var lanSetupTemplate = template.Must(template.New("setup").Parse(lanSetupPage))

// lanSetupHandler serves the setup page and the certificate of ca.
func lanSetupHandler(ca *x509.Certificate) (http.Handler, error) {
	var ranges []string
	for _, n := range privateNets() {
		if !n.IP.IsLoopback() {
			ranges = append(ranges, n.String())
		}
	}
	var page bytes.Buffer
	err := lanSetupTemplate.Execute(&page, struct{ Name, Fingerprint, Ranges string }{
		Name:        ca.Subject.CommonName,
		Fingerprint: FormatFingerprint(certFingerprint(ca.Raw)),
		Ranges:      strings.Join(ranges, ", "),
	})
	if err != nil {
		return nil, fmt.Errorf("making the setup page: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src https:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		_, _ = w.Write(page.Bytes())
	})
	mux.HandleFunc("GET "+lanCAPath, func(w http.ResponseWriter, _ *http.Request) {
		// DER with the type phones install certificates from (iOS
		// offers a profile, Android saves it for Settings).
		h := w.Header()
		h.Set("Content-Type", "application/x-x509-ca-cert")
		h.Set("Content-Disposition", `attachment; filename="pilotdesk-ca.crt"`)
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(ca.Raw)
	})
	return mux, nil
}
