package cli

import (
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A relay on the network without TLS (docs/cli.md, Devices in clear): the
// real binary refuses to start while its data dir holds a live device
// token, with a usage error (exit 2) that names the devices and the way
// out, and starts with --tls-cert; on a data dir without devices it starts
// (the relay's own --token decides, as the spec says), and then
// `pilotdesk token create` refuses to make a token that would travel in
// clear.
func TestServeRefusesDeviceTokensInClear(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := pilotdeskBinary(t)
	dir := t.TempDir()
	if out, err := exec.Command(bin, "token", "create", "--name", "phone", "--role", "controller", "--data-dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("token create: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve", "--listen", "0.0.0.0:0", "--token", "owner-token-0123456789", "--agent", "script", "--data-dir", dir)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("serve on 0.0.0.0 in clear with a device token: %v, want exit 2; output:\n%s", err, out)
	}
	for _, want := range []string{"refusing to listen on 0.0.0.0:0 without TLS", `"phone"`, "--tls-cert"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}

	// With a certificate it starts, on the same data dir.
	certDir := t.TempDir()
	if _, err := lanCertificate(certDir, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	tlsCmd, _, _ := startServe(t, "--listen", "0.0.0.0:0", "--token", "owner-token-0123456789", "--agent", "script", "--data-dir", dir,
		"--tls-cert", filepath.Join(certDir, lanCertName), "--tls-key", filepath.Join(certDir, lanKeyName))
	_ = tlsCmd.Process.Signal(syscall.SIGTERM)
	_ = tlsCmd.Wait()

	// Without devices the spec's rule holds: a token is enough to start…
	fresh := t.TempDir()
	clearCmd, _, _ := startServe(t, "--listen", "0.0.0.0:0", "--token", "owner-token-0123456789", "--agent", "script", "--data-dir", fresh)
	// …but no device token is made for it.
	out, err = exec.Command(bin, "token", "create", "--name", "phone", "--role", "viewer", "--data-dir", fresh).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "listens on the network without TLS") {
		t.Fatalf("token create beside a relay in clear: %v\n%s", err, out)
	}
	if out, _ := exec.Command(bin, "token", "list", "--data-dir", fresh).CombinedOutput(); !strings.Contains(string(out), "No device tokens") {
		t.Fatalf("a token was made anyway:\n%s", out)
	}
	_ = clearCmd.Process.Signal(syscall.SIGTERM)
	_ = clearCmd.Wait()
}
