//go:build !nogui

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
	"github.com/pilotdesk/pilotdesk/ui"
)

// windowDevices is the window's "Connect a device…" over the relay it
// embeds (ui.Devices).
type windowDevices struct {
	relay *relay.Relay
	share ui.ShareInfo
}

// newWindowDevices manages the device tokens of the window's relay: the
// one it embeds, or the one it attached to on its data dir (the window
// holds that relay's own token, the owner's, and the devices table is in
// the data dir it shares: dataDirDevices). nil for a remote relay: its
// tokens are made where it runs (pilotdesk token), the window says so.
func newWindowDevices(t target) ui.Devices {
	if t.relay == nil {
		if t.attachedTo != nil && t.dataDir != "" {
			return newDataDirDevices(t)
		}
		return nil
	}
	return windowDevices{relay: t.relay, share: shareInfo(t.sharedURL, t.lan, t.caFingerprint)}
}

// shareInfo says how devices reach a relay that listens on relayURL and,
// when lan is not "", on the network at lan (HOST:PORT) with a
// certificate issued by the local CA whose fingerprint is caFP.
func shareInfo(relayURL, lan, caFP string) ui.ShareInfo {
	info := ui.ShareInfo{URL: relayURL}
	host := hostOf(relayURL)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	ip := net.ParseIP(host)
	switch {
	case lan != "":
		info.URL, info.LAN = "wss://"+lan+"/ws", true
		// The setup page shares the port (portMux, lansetup.go).
		info.SetupURL = "http://" + lan + "/"
		info.CAFingerprint = FormatFingerprint(caFP)
	case ip != nil && ip.IsUnspecified():
		// On every address, but none a phone could reach.
		info.Unreachable = "The relay listens on the network, but this computer has no private network address " +
			"(such as 192.168.x.x or 10.x.x.x, or a Tailscale address 100.x.x.x) on which a phone could reach it, " +
			"so no code is shown. Join the phone's Wi-Fi or a Tailscale network and open this dialog again, " +
			"or serve the relay with a certificate of its own (pilotdesk serve --tls-cert; see docs/devices.md)."
	case !relay.RequiresToken(hostOf(relayURL)):
		// The loopback: the dialog says so itself.
	case strings.HasPrefix(relayURL, "wss://"):
		// serve --tls-cert on an address or a name of the network.
		info.LAN = true
	default:
		info.Unreachable = "The relay listens on the network without TLS, so no device token is made for it: " +
			"restart it with --tls-cert and --tls-key (docs/devices.md)."
	}
	return info
}

func (d windowDevices) Share() ui.ShareInfo { return d.share }

func (d windowDevices) CreateDevice(ctx context.Context, name, role string, expires time.Time) (string, error) {
	token, _, err := d.relay.CreateDevice(ctx, relay.NewDevice{Name: name, Role: role, Expires: expires})
	return token, err
}

func (d windowDevices) Devices(ctx context.Context) ([]ui.DeviceInfo, error) {
	devs, err := d.relay.Devices(ctx)
	if err != nil {
		return nil, err
	}
	infos := deviceInfos(devs)
	conns := d.relay.ConnectedDevices()
	for i := range infos {
		infos[i].Connected = conns[infos[i].Name]
	}
	return infos, nil
}

func (d windowDevices) RevokeDevice(ctx context.Context, name string) error {
	return d.relay.RevokeDevice(ctx, name)
}

func deviceInfos(devs []history.Device) []ui.DeviceInfo {
	out := make([]ui.DeviceInfo, len(devs))
	for i, dev := range devs {
		out[i] = ui.DeviceInfo{Name: dev.Name, Role: dev.Role, Created: dev.CreatedAt, Expires: dev.ExpiresAt, LastUsed: dev.LastUsed}
	}
	return out
}

// dataDirDevices is the dialog of a window attached to the relay of
// another process on the same data dir: it changes the data dir's devices
// table as `pilotdesk token` does (SQLite's locking makes that safe beside
// the running relay, which looks a new token up on its first use and
// notices a revocation within a second). The database is opened for each
// action, not held while the window lives.
type dataDirDevices struct {
	dir   string
	share ui.ShareInfo
	// clear: the relay listens on the network without TLS, so no token
	// is made for it (tls.go, refuseClearDevices).
	clear bool
	// inNATS: the relay keeps its tokens in the data dir's NATS node,
	// which it holds (target.tokensInNATS): none can be made from here.
	inNATS bool
	pid    string
}

func newDataDirDevices(t target) dataDirDevices {
	r := t.attachedTo
	return dataDirDevices{dir: t.dataDir, share: shareInfo(r.deviceURL(), r.LAN, r.CAFingerprint), clear: r.ClearNetwork,
		inNATS: t.tokensInNATS, pid: t.Attached}
}

func (d dataDirDevices) Share() ui.ShareInfo { return d.share }

func (d dataDirDevices) open(ctx context.Context) (*sqlite.DeviceStore, error) {
	if d.inNATS {
		// The SQLite table of the data dir is not the relay's: a token
		// made there would never open a connection.
		return nil, errTokensInHeldNode(d.pid, d.dir)
	}
	store, err := sqlite.OpenDevices(ctx, d.dir, sqlite.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, fmt.Errorf("opening the device tokens in %s: %w", d.dir, err)
	}
	return store, nil
}

func (d dataDirDevices) CreateDevice(ctx context.Context, name, role string, expires time.Time) (string, error) {
	if d.clear {
		return "", errors.New(unwrapUsage(errClearNetwork(d.dir)))
	}
	store, err := d.open(ctx)
	if err != nil {
		return "", err
	}
	defer store.Close()
	token, _, err := relay.CreateDevice(ctx, store, relay.NewDevice{Name: name, Role: role, Expires: expires})
	return token, err
}

func (d dataDirDevices) Devices(ctx context.Context) ([]ui.DeviceInfo, error) {
	store, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	devs, err := store.Devices(ctx)
	if err != nil {
		return nil, err
	}
	return deviceInfos(devs), nil
}

func (d dataDirDevices) RevokeDevice(ctx context.Context, name string) error {
	store, err := d.open(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	return store.RevokeDevice(ctx, name)
}
