package history

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Device is a device token as the relay keeps it: its name, role and dates,
// and the SHA-256 of the token, never the token itself (docs/protocol.md,
// Devices and roles).
type Device struct {
	Name      string // unique; what `pilotdesk token revoke` names
	Role      string // viewer, controller or owner
	Hash      [sha256.Size]byte
	CreatedAt time.Time
	ExpiresAt time.Time // zero: never
	LastUsed  time.Time // zero: never used
}

// Expired reports whether the device's token has expired at now.
func (d Device) Expired(now time.Time) bool {
	return !d.ExpiresAt.IsZero() && !now.Before(d.ExpiresAt)
}

// Devices keeps device tokens. Its methods are safe for concurrent use, and
// the SQLite store's also across processes: `pilotdesk token` changes the
// table of a data dir whose relay is running.
type Devices interface {
	// AddDevice stores a new device; ErrDeviceExists if the name or the
	// hash is taken.
	AddDevice(ctx context.Context, d Device) error
	// Devices lists every device, oldest first.
	Devices(ctx context.Context) ([]Device, error)
	// DeviceByHash returns the device whose token has this hash, or
	// ErrNoDevice.
	DeviceByHash(ctx context.Context, hash [sha256.Size]byte) (Device, error)
	// RevokeDevice removes a device, or returns ErrNoDevice; a store
	// that keeps Web Push subscriptions (Pushes) removes the device's.
	RevokeDevice(ctx context.Context, name string) error
	// TouchDevice records that the device's token was used at at.
	// An unknown name is not an error (it may have just been revoked).
	TouchDevice(ctx context.Context, name string, at time.Time) error
}

// DevicesWatcher is a Devices that tells of changes as they happen (the
// JetStream store, whose table every relay of a cluster shares), so that a
// relay closes a device's connections as soon as another revokes it,
// rather than at its next poll of the table.
type DevicesWatcher interface {
	// WatchDevices calls changed, from a goroutine of its own, each time
	// the table changes (and may once at the start), until ctx ends; it
	// returns once the watch is set up. changed should read Devices.
	WatchDevices(ctx context.Context, changed func()) error
}

// ErrDeviceExists is returned by AddDevice for a name already taken.
var ErrDeviceExists = errors.New("a device with that name exists")

// ErrNoDevice is returned for a device name or token hash the store does
// not have.
var ErrNoDevice = errors.New("no such device")

// MaxDeviceName is the longest device name, in bytes.
const MaxDeviceName = 64

// CheckDeviceName says what is wrong with a device name, or nil.
func CheckDeviceName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errors.New("a device needs a name, such as \"Pixel\" or \"work laptop\"")
	case name != strings.TrimSpace(name):
		return errors.New("a device name may not start or end with a space")
	case len(name) > MaxDeviceName:
		return fmt.Errorf("a device name is at most %d bytes", MaxDeviceName)
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return errors.New("a device name may not hold control characters")
	}
	return nil
}

// The in-memory store keeps devices too: a relay without a data dir has
// devices until it stops.

func (m *Memory) AddDevice(ctx context.Context, d Device) error {
	m.devMu.Lock()
	defer m.devMu.Unlock()
	for _, o := range m.devices {
		if o.Name == d.Name || o.Hash == d.Hash {
			return fmt.Errorf("history: add device %q: %w", d.Name, ErrDeviceExists)
		}
	}
	m.devices = append(m.devices, d)
	return nil
}

func (m *Memory) Devices(ctx context.Context) ([]Device, error) {
	m.devMu.Lock()
	defer m.devMu.Unlock()
	out := slices.Clone(m.devices)
	slices.SortStableFunc(out, func(a, b Device) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

func (m *Memory) DeviceByHash(ctx context.Context, hash [sha256.Size]byte) (Device, error) {
	m.devMu.Lock()
	defer m.devMu.Unlock()
	for _, d := range m.devices {
		if d.Hash == hash {
			return d, nil
		}
	}
	return Device{}, ErrNoDevice
}

func (m *Memory) RevokeDevice(ctx context.Context, name string) error {
	m.devMu.Lock()
	defer m.devMu.Unlock()
	i := slices.IndexFunc(m.devices, func(d Device) bool { return d.Name == name })
	if i < 0 {
		return fmt.Errorf("history: revoke device %q: %w", name, ErrNoDevice)
	}
	m.removeDevicePushesLocked(m.devices[i].Hash) // push.go
	m.devices = slices.Delete(m.devices, i, i+1)
	return nil
}

func (m *Memory) TouchDevice(ctx context.Context, name string, at time.Time) error {
	m.devMu.Lock()
	defer m.devMu.Unlock()
	for i := range m.devices {
		if m.devices[i].Name == name {
			m.devices[i].LastUsed = at
		}
	}
	return nil
}
