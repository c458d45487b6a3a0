package cli

import (
	"context"
	"time"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/ui"
)

// windowDevices is the window's "Connect a device…" over the relay it
// embeds (ui.Devices).
type windowDevices struct {
	relay *relay.Relay
	share ui.ShareInfo
}

// newWindowDevices is nil unless the window embeds its relay: tokens of a
// relay elsewhere are made where it runs (pilotdesk token).
func newWindowDevices(t target) ui.Devices {
	if t.relay == nil {
		return nil
	}
	info := ui.ShareInfo{URL: t.sharedURL}
	if t.lan != "" {
		info.URL, info.LAN = "wss://"+t.lan+"/ws", true
		info.Fingerprint = FormatFingerprint(t.Fingerprint)
	}
	return windowDevices{relay: t.relay, share: info}
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
	out := make([]ui.DeviceInfo, len(devs))
	for i, dev := range devs {
		out[i] = ui.DeviceInfo{Name: dev.Name, Role: dev.Role, Created: dev.CreatedAt, Expires: dev.ExpiresAt, LastUsed: dev.LastUsed}
	}
	return out, nil
}

func (d windowDevices) RevokeDevice(ctx context.Context, name string) error {
	return d.relay.RevokeDevice(ctx, name)
}
