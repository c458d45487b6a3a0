package historytest

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// RunDevices checks every contract of history.Devices. open must return a
// new, empty store each time; the test closes it with close.
func RunDevices(t *testing.T, open func(t *testing.T) (history.Devices, func() error)) {
	tests := []struct {
		name string
		fn   func(t *testing.T, d history.Devices)
	}{
		{"RoundTrip", testDeviceRoundTrip},
		{"NameAndHashUnique", testDeviceUnique},
		{"Revoke", testDeviceRevoke},
		{"Touch", testDeviceTouch},
		{"Pushes", testPushes}, // push.go; skipped by a store that keeps none
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, closeFn := open(t)
			defer func() {
				if err := closeFn(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			tc.fn(t, d)
		})
	}
}

func device(name, role string, created time.Duration) history.Device {
	return history.Device{Name: name, Role: role, Hash: sha256.Sum256([]byte("token of " + name)), CreatedAt: base.Add(created)}
}

func sameDevice(t *testing.T, got, want history.Device) {
	t.Helper()
	if got.Name != want.Name || got.Role != want.Role || got.Hash != want.Hash || !got.CreatedAt.Equal(want.CreatedAt) ||
		!got.ExpiresAt.Equal(want.ExpiresAt) || !got.LastUsed.Equal(want.LastUsed) {
		t.Fatalf("device %+v, want %+v", got, want)
	}
}

func testDeviceRoundTrip(t *testing.T, d history.Devices) {
	ctx := context.Background()
	if devs, err := d.Devices(ctx); err != nil || len(devs) != 0 {
		t.Fatalf("empty store: %v, %v", devs, err)
	}
	a := device("Pixel", "controller", 0)
	a.ExpiresAt = base.Add(24 * time.Hour)
	b := device("work laptop", "viewer", time.Second)
	for _, dev := range []history.Device{b, a} {
		if err := d.AddDevice(ctx, dev); err != nil {
			t.Fatalf("AddDevice(%s): %v", dev.Name, err)
		}
	}
	devs, err := d.Devices(ctx)
	if err != nil || len(devs) != 2 {
		t.Fatalf("Devices: %v, %v", devs, err)
	}
	sameDevice(t, devs[0], a) // oldest first
	sameDevice(t, devs[1], b)
	got, err := d.DeviceByHash(ctx, b.Hash)
	if err != nil {
		t.Fatal(err)
	}
	sameDevice(t, got, b)
	if _, err := d.DeviceByHash(ctx, sha256.Sum256([]byte("nobody"))); !errors.Is(err, history.ErrNoDevice) {
		t.Fatalf("unknown hash: %v", err)
	}
}

func testDeviceUnique(t *testing.T, d history.Devices) {
	ctx := context.Background()
	a := device("Pixel", "owner", 0)
	if err := d.AddDevice(ctx, a); err != nil {
		t.Fatal(err)
	}
	sameName := device("Pixel", "viewer", time.Second)
	if err := d.AddDevice(ctx, sameName); !errors.Is(err, history.ErrDeviceExists) {
		t.Fatalf("a second Pixel: %v", err)
	}
	sameHash := device("other", "viewer", time.Second)
	sameHash.Hash = a.Hash
	if err := d.AddDevice(ctx, sameHash); !errors.Is(err, history.ErrDeviceExists) {
		t.Fatalf("a second device with the same token: %v", err)
	}
	if devs, _ := d.Devices(ctx); len(devs) != 1 {
		t.Fatalf("devices after refused adds: %+v", devs)
	}
}

func testDeviceRevoke(t *testing.T, d history.Devices) {
	ctx := context.Background()
	a, b := device("a", "viewer", 0), device("b", "viewer", time.Second)
	for _, dev := range []history.Device{a, b} {
		if err := d.AddDevice(ctx, dev); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.RevokeDevice(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := d.RevokeDevice(ctx, "a"); !errors.Is(err, history.ErrNoDevice) {
		t.Fatalf("revoking twice: %v", err)
	}
	if _, err := d.DeviceByHash(ctx, a.Hash); !errors.Is(err, history.ErrNoDevice) {
		t.Fatalf("a revoked device's token: %v", err)
	}
	devs, _ := d.Devices(ctx)
	if len(devs) != 1 || devs[0].Name != "b" {
		t.Fatalf("devices after revoking a: %+v", devs)
	}
	// The name may be given again, with a new token.
	again := device("a", "owner", 2*time.Second)
	again.Hash = sha256.Sum256([]byte("new token"))
	if err := d.AddDevice(ctx, again); err != nil {
		t.Fatalf("re-adding a revoked name: %v", err)
	}
}

func testDeviceTouch(t *testing.T, d history.Devices) {
	ctx := context.Background()
	a := device("a", "viewer", 0)
	if err := d.AddDevice(ctx, a); err != nil {
		t.Fatal(err)
	}
	at := base.Add(time.Hour)
	if err := d.TouchDevice(ctx, "a", at); err != nil {
		t.Fatal(err)
	}
	if err := d.TouchDevice(ctx, "gone", at); err != nil {
		t.Fatalf("touching an unknown device: %v", err)
	}
	got, err := d.DeviceByHash(ctx, a.Hash)
	if err != nil || !got.LastUsed.Equal(at) {
		t.Fatalf("after touch: %+v, %v", got, err)
	}
}
