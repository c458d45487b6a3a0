package relay

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// CloseRevoked closes the connections of a device token that was revoked
// or expired (docs/protocol.md, Devices and roles).
const CloseRevoked websocket.StatusCode = 4003

// DefaultDevicePoll is how often the relay reads the devices table while
// connections with device tokens are open, to notice a revocation made by
// another process (`pilotdesk token revoke` beside a running relay).
const DefaultDevicePoll = time.Second

// identity is who a connection is: the device of its token, that token's
// role, and the kind of client it announced. It is fixed at the upgrade.
type identity struct {
	device string
	role   string
	client string
	// hash is the SHA-256 of a device token; zero for the relay's own
	// token (or a relay without one), which is never revoked.
	hash      [sha256.Size]byte
	expiresAt time.Time // zero: never
}

func (id identity) isDevice() bool { return id.hash != [sha256.Size]byte{} }

// by is the identity as answeredBy and sentBy carry it.
func (id identity) by() *protocol.By {
	return &protocol.By{Device: id.device, Client: id.client}
}

// presentedToken is the token an upgrade carries: a bearer header, or else
// the token query parameter.
func presentedToken(req *http.Request) string {
	if h := req.Header.Get("Authorization"); len(h) > len("Bearer ") && strings.EqualFold(h[:len("Bearer ")], "Bearer ") {
		return strings.TrimSpace(h[len("Bearer "):])
	}
	return req.URL.Query().Get("token")
}

// authenticate says who an upgrade is, or false for HTTP 401. The relay's
// own token is compared in constant time (fixed-length digests: neither the
// token's content nor its length leaks); a device token is looked up by
// its SHA-256, which is all the store has of it.
func (r *Relay) authenticate(req *http.Request) (identity, bool) {
	id, ok, _ := r.checkToken(req)
	return id, ok
}

// checkToken is authenticate, and says when the token could not be checked
// (the devices table failed, or the client left during the look-up): that
// is no wrong token, and must not count as one towards the throttle of
// its address, which would lock out the owner there too.
func (r *Relay) checkToken(req *http.Request) (_ identity, _ bool, unchecked error) {
	own := identity{device: protocol.OwnDevice, role: protocol.RoleOwner, client: protocol.ClientKind(req.URL.Query().Get("client"))}
	given := presentedToken(req)
	if !r.token {
		// A relay without a token (serve --insecure-no-auth, or one a test
		// runs) lets in only a connection that presents none: a token it
		// cannot check (garbled, revoked, another relay's) is refused,
		// never taken for the owner's, and device tokens mean nothing.
		return own, given == "", nil
	}
	if given == "" {
		return identity{}, false, nil
	}
	d := sha256.Sum256([]byte(given))
	if subtle.ConstantTimeCompare(d[:], r.tokenDigest[:]) == 1 {
		return own, true, nil
	}
	if r.devices != nil {
		ctx, cancel := context.WithTimeout(req.Context(), 5*time.Second)
		dev, err := r.devices.DeviceByHash(ctx, d)
		cancel()
		switch {
		case err == nil && !dev.Expired(r.deviceClock()):
			return identity{device: dev.Name, role: dev.Role, client: own.client, hash: d, expiresAt: dev.ExpiresAt}, true, nil
		case err != nil && !errors.Is(err, history.ErrNoDevice):
			if req.Context().Err() == nil { // else the client left: nothing to say
				r.log.Error("relay: could not look up a device token; refusing the upgrade", "err", err)
			}
			return identity{}, false, err
		}
	}
	// A token the relay does not know (wrong, garbled, revoked, expired)
	// is refused: it is never anybody's.
	return identity{}, false, nil
}

// forbid answers a message the connection's role may not send.
func (c *conn) forbid(req protocol.Request) {
	c.refuse(req.Data, &protocol.Error{Code: protocol.CodeForbidden, Type: req.Type, ConversationID: req.ConversationID(),
		Message: fmt.Sprintf("this device's token (%q, role %s) may not send %s: that needs the %s role; ask the relay's owner for another token",
			c.id.device, c.id.role, req.Type, protocol.RequiredRole(req.Type))})
}

// watchExpiry closes the connection when its token expires; the returned
// function stops the timer.
func (c *conn) watchExpiry() (stop func()) {
	if c.id.expiresAt.IsZero() {
		return func() {}
	}
	t := time.AfterFunc(c.id.expiresAt.Sub(c.r.deviceClock()), func() {
		if c.closeWith(CloseRevoked, "token revoked: it expired", false) {
			c.log.Info("relay: a device token expired; closed its connection", "device", c.id.device)
		}
	})
	return func() { t.Stop() }
}

// touchDevice records the use of a device token (the list's last use).
func (r *Relay) touchDevice(id identity) {
	if !id.isDevice() || r.devices == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.devices.TouchDevice(ctx, id.device, r.deviceClock()); err != nil {
		r.log.Warn("relay: could not record a device's last use", "device", id.device, "err", err)
	}
}

// watchDevices asks the devices table to say when it changes, when it
// can (history.DevicesWatcher: the JetStream store, whose table every
// relay of a cluster shares), and returns the channel that says so (nil:
// it cannot). The watch ends with the relay's context.
func (r *Relay) watchDevices() <-chan struct{} {
	w, ok := r.devices.(history.DevicesWatcher)
	if !ok {
		return nil
	}
	kick := make(chan struct{}, 1)
	err := w.WatchDevices(r.ctx, func() {
		select {
		case kick <- struct{}{}:
		default: // a check is due already, and reads this change too
		}
	})
	if err != nil {
		r.log.Warn("relay: could not watch the device tokens; a revocation made elsewhere closes connections at the next poll", "err", err)
		return nil
	}
	return kick
}

// pollDevices reads the devices table every interval while connections
// with device tokens are open, and closes those whose token is gone: a
// revocation made by another process reaches the relay within interval.
// It reads it too each time kick (nil: never) says the table changed: a
// revocation on another relay of the cluster closes the connections here
// as soon as the watch tells, and the poll remains for a watch that stops.
// (Revocations through the relay, RevokeDevice, close at once.) It runs
// until the relay closes.
func (r *Relay) pollDevices(interval time.Duration, kick <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
		if !r.hasDeviceConns() {
			continue
		}
		ctx, cancel := context.WithTimeout(r.ctx, interval+5*time.Second)
		devs, err := r.devices.Devices(ctx)
		cancel()
		if err != nil {
			if r.ctx.Err() == nil {
				r.log.Warn("relay: could not read the device tokens", "err", err)
			}
			continue
		}
		live := make(map[[sha256.Size]byte]bool, len(devs))
		for _, d := range devs {
			live[d.Hash] = true
		}
		r.closeDeviceConns(func(id identity) bool { return !live[id.hash] })
	}
}

func (r *Relay) hasDeviceConns() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.conns {
		if c.id.isDevice() {
			return true
		}
	}
	return false
}

// closeDeviceConns closes, with CloseRevoked, the connections of device
// tokens that gone says are revoked.
func (r *Relay) closeDeviceConns(gone func(identity) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.conns {
		if c.id.isDevice() && gone(c.id) && c.closeWith(CloseRevoked, "token revoked", false) {
			c.log.Info("relay: a device token was revoked; closed its connection", "device", c.id.device)
		}
	}
}

// ---- making, listing and revoking device tokens ----

// ErrNoDevices: the relay keeps no device tokens (its store has no table
// for them).
var ErrNoDevices = errors.New("this relay keeps no device tokens")

// NewDevice is a device token to make.
type NewDevice struct {
	Name    string
	Role    string    // viewer, controller or owner
	Expires time.Time // zero: never
	// At is when it is made, against which Expires is checked; zero: now.
	At time.Time
}

// CreateDevice makes a token for a new device in store and returns the
// token, which exists nowhere else: the store keeps its SHA-256. It is
// what the window's Share dialog (through Relay.CreateDevice) and
// `pilotdesk token create` call.
func CreateDevice(ctx context.Context, store history.Devices, nd NewDevice) (string, history.Device, error) {
	if err := history.CheckDeviceName(nd.Name); err != nil {
		return "", history.Device{}, err
	}
	if strings.EqualFold(nd.Name, protocol.OwnDevice) {
		return "", history.Device{}, fmt.Errorf("%q is the relay's own token; choose another name", protocol.OwnDevice)
	}
	if !protocol.ValidRole(nd.Role) {
		return "", history.Device{}, fmt.Errorf("the role must be viewer, controller or owner, not %q", nd.Role)
	}
	now := nd.At
	if now.IsZero() {
		now = time.Now()
	}
	if !nd.Expires.IsZero() && !nd.Expires.After(now) {
		return "", history.Device{}, fmt.Errorf("the expiry %s has passed", nd.Expires.Format(time.RFC3339))
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", history.Device{}, fmt.Errorf("making a token: %w", err)
	}
	// URL-safe, so it travels as it is in ?token= and in the web
	// client's #token=; the prefix tells a device token at a glance.
	token := "pdt_" + base64.RawURLEncoding.EncodeToString(b[:])
	dev := history.Device{Name: nd.Name, Role: nd.Role, Hash: sha256.Sum256([]byte(token)), CreatedAt: now, ExpiresAt: nd.Expires}
	if err := store.AddDevice(ctx, dev); err != nil {
		if errors.Is(err, history.ErrDeviceExists) {
			return "", history.Device{}, fmt.Errorf("a device named %q exists already: revoke it first, or choose another name", nd.Name)
		}
		return "", history.Device{}, fmt.Errorf("storing the device: %w", err)
	}
	return token, dev, nil
}

// CreateDevice makes a device token (see the function CreateDevice).
func (r *Relay) CreateDevice(ctx context.Context, nd NewDevice) (string, history.Device, error) {
	if r.devices == nil {
		return "", history.Device{}, ErrNoDevices
	}
	if nd.At.IsZero() {
		nd.At = r.deviceClock()
	}
	token, dev, err := CreateDevice(ctx, r.devices, nd)
	if err == nil {
		r.log.Info("relay: made a device token", "device", dev.Name, "role", dev.Role)
	}
	return token, dev, err
}

// Devices lists the device tokens, oldest first.
func (r *Relay) Devices(ctx context.Context) ([]history.Device, error) {
	if r.devices == nil {
		return nil, ErrNoDevices
	}
	return r.devices.Devices(ctx)
}

// ConnectedDevices counts the open connections of each device token on
// this relay, by device name (the relay's own token is not a device): the
// window's device list says which devices are connected now. A device
// connected to another relay of a cluster is not counted.
func (r *Relay) ConnectedDevices() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int)
	for c := range r.conns {
		if c.id.isDevice() {
			out[c.id.device]++
		}
	}
	return out
}

// RevokeDevice removes a device's token and closes its connections at once
// (CloseRevoked); its next upgrade gets 401.
func (r *Relay) RevokeDevice(ctx context.Context, name string) error {
	if r.devices == nil {
		return ErrNoDevices
	}
	// The store removes the device's push subscriptions with it
	// (history.Devices); the pusher also skips and removes any left.
	if err := r.devices.RevokeDevice(ctx, name); err != nil {
		return err
	}
	r.log.Info("relay: revoked a device token", "device", name)
	r.closeDeviceConns(func(id identity) bool { return id.device == name })
	return nil
}
