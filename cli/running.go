package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/pilotdesk/pilotdesk/internal/atomicfile"
)

// runningName is the file in the data dir that says how to reach the relay
// running on it: its URL and its own token, so that `pilotdesk chat` and
// `pilotdesk token` on the same account find it (docs/cli.md). Only this
// user may read it (0600, in a 0700 data dir); the relay removes it when
// it stops. One left behind by a relay that was killed is harmless: the
// data dir's lock says no relay runs, and the next relay overwrites it.
const runningName = "relay.json"

// runningRelay is what runningName holds.
type runningRelay struct {
	URL   string `json:"url"`   // ws://127.0.0.1:PORT/ws, or wss://…
	Token string `json:"token"` // the relay's own token (the owner's)
	PID   int    `json:"pid"`
	// LAN is the address devices on the network use (HOST:PORT), when the
	// relay listens there too.
	LAN string `json:"lan,omitempty"`
	// Fingerprint is the SHA-256 of the TLS certificate (hex), for a
	// client that pins the relay's self-signed certificate.
	Fingerprint string `json:"fingerprint,omitempty"`
	// CAFingerprint is the SHA-256 of the local CA that issued it (hex),
	// for a relay reachable from the network (localca.go).
	CAFingerprint string `json:"caFingerprint,omitempty"`
	// Name is the host name of the relay's --tls-cert certificate (such
	// as tailscale cert's laptop.tailnet.ts.net): devices' links carry it
	// in place of URL's address, which the certificate does not name.
	Name string `json:"name,omitempty"`
	// ClearNetwork: the relay listens beyond the loopback without TLS, so
	// `pilotdesk token create` makes no device token for it (tls.go,
	// refuseClearDevices).
	ClearNetwork bool `json:"clearNetwork,omitempty"`
}

// localURL is the URL a client on this machine uses for a relay that
// listens on addr: an unspecified host (0.0.0.0, ::) is reached on the
// loopback.
func localURL(scheme string, addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return scheme + "://" + addr.String() + "/ws"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/ws"
}

// writeRunning writes the file atomically (a reader never sees half of it).
func writeRunning(dir string, r runningRelay) (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, runningName)
	if err := atomicfile.WriteFile(path, b, atomicfile.OwnerOnly); err != nil {
		return "", err
	}
	return path, nil
}

// errNoRunning: no relay says it runs on the data dir.
var errNoRunning = errors.New("no relay running on this data dir left its address")

// readRunning reads the file a running relay left in dir.
func readRunning(dir string) (runningRelay, error) {
	path := filepath.Join(dir, runningName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return runningRelay{}, errNoRunning
	}
	if err != nil {
		return runningRelay{}, fmt.Errorf("reading %s: %w", path, err)
	}
	var r runningRelay
	if err := json.Unmarshal(b, &r); err != nil || r.URL == "" {
		return runningRelay{}, fmt.Errorf("%s is not what a relay writes (%v)", path, err)
	}
	return r, nil
}

// removeRunning removes the file if it is still this process's.
func removeRunning(path string) {
	if path == "" {
		return
	}
	if b, err := os.ReadFile(path); err == nil {
		var r runningRelay
		if json.Unmarshal(b, &r) == nil && r.PID != os.Getpid() {
			return // another relay's now
		}
	}
	_ = os.Remove(path)
}

func pidText(pid int) string {
	if pid <= 0 {
		return "another process"
	}
	return "process " + strconv.Itoa(pid)
}

// deviceURL is the relay URL devices use: on the network address of a
// relay reachable from the network, or with the name of its certificate.
func (r runningRelay) deviceURL() string {
	switch {
	case r.LAN != "":
		return "wss://" + r.LAN + "/ws"
	case r.Name != "":
		return withHost(r.URL, r.Name)
	}
	return r.URL
}

// withHost is relayURL with its host name replaced by name, its port kept.
func withHost(relayURL, name string) string {
	u, err := url.Parse(relayURL)
	if err != nil {
		return relayURL
	}
	if port := u.Port(); port != "" {
		u.Host = net.JoinHostPort(name, port)
	} else {
		u.Host = name
	}
	return u.String()
}
