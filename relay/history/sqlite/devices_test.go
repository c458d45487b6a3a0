package sqlite

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/historytest"
)

var _ history.Devices = (*Store)(nil)

func TestDevicesConformance(t *testing.T) {
	t.Parallel()
	historytest.RunDevices(t, func(t *testing.T) (history.Devices, func() error) {
		s := openStore(t, t.TempDir(), Options{})
		return s, s.Close
	})
}

// The table opened beside a running relay, as `pilotdesk token` does.
func TestDevicesConformanceShared(t *testing.T) {
	t.Parallel()
	historytest.RunDevices(t, func(t *testing.T) (history.Devices, func() error) {
		dir := t.TempDir()
		s := openStore(t, dir, Options{})
		d, err := OpenDevices(context.Background(), dir, quiet())
		if err != nil {
			t.Fatal(err)
		}
		if !d.Shared {
			t.Fatal("OpenDevices beside an open store did not share it")
		}
		return d, func() error { return errors.Join(d.Close(), s.Close()) }
	})
}

// A hand-made version 1 file gets the devices table on open.
func TestMigratesV1ToDevices(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	db := rawDB(t, path)
	execAll(t, db, frozenV1...)
	execAll(t, db, `INSERT INTO meta VALUES ('epoch', 'feedfacecafebeef')`)
	db.Close()
	s := openStore(t, dir, Options{})
	defer mustClose(t, s)
	if err := s.AddDevice(context.Background(), history.Device{Name: "Pixel", Role: "viewer", Hash: sha256.Sum256([]byte("t"))}); err != nil {
		t.Fatalf("AddDevice after migrating from version 1: %v", err)
	}
	if s.Epoch() != "feedfacecafebeef" {
		t.Fatalf("epoch %q", s.Epoch())
	}
}

// OpenDevices with no relay running opens (and here creates) the store
// for the command's time, then lets a relay have the data dir again; with
// one running, its changes reach the relay's store at once.
func TestOpenDevicesWithAndWithoutRelay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := OpenDevices(ctx, dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if d.Shared {
		t.Fatal("no relay runs, yet the table was opened beside one")
	}
	if err := d.AddDevice(ctx, history.Device{Name: "a", Role: "owner", Hash: sha256.Sum256([]byte("a")), CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	s := openStore(t, dir, Options{}) // the data dir is free again
	defer mustClose(t, s)
	if devs, err := s.Devices(ctx); err != nil || len(devs) != 1 || devs[0].Name != "a" {
		t.Fatalf("the relay's store sees %+v, %v", devs, err)
	}
	d, err = OpenDevices(ctx, dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := range 3 {
		name := fmt.Sprintf("dev%d", i)
		if err := d.AddDevice(ctx, history.Device{Name: name, Role: "viewer", Hash: sha256.Sum256([]byte(name)), CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.RevokeDevice(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if devs, err := s.Devices(ctx); err != nil || len(devs) != 3 {
		t.Fatalf("the relay's store sees %+v, %v", devs, err)
	}
	if _, err := s.DeviceByHash(ctx, sha256.Sum256([]byte("a"))); !errors.Is(err, history.ErrNoDevice) {
		t.Fatalf("revoked beside the relay, yet its store finds it: %v", err)
	}
}
