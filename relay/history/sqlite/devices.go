package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// schemaV2 adds the device tokens (docs/protocol.md, Devices and roles):
// only the SHA-256 of each token is kept. Times are Unix nanoseconds, NULL
// for never.
const schemaV2 = `
CREATE TABLE devices (
	name       TEXT PRIMARY KEY,
	role       TEXT NOT NULL,
	hash       BLOB NOT NULL UNIQUE,
	created_at INTEGER NOT NULL,
	expires_at INTEGER,
	last_used  INTEGER
) WITHOUT ROWID;
`

func migrateV2(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, schemaV2)
	return err
}

// deviceDB is the devices table, on the store's own connections or, for
// `pilotdesk token` beside a running relay, on connections of another
// process (OpenDevices). SQLite's locks and the write-ahead log make that
// safe across processes; the relay notices a change by polling.
type deviceDB struct {
	w *sql.DB // writes
	r *sql.DB // reads
}

var _ history.Devices = deviceDB{}

const deviceColumns = `name, role, hash, created_at, expires_at, last_used`

func (d deviceDB) AddDevice(ctx context.Context, dev history.Device) error {
	created, err := timeArg(dev.CreatedAt)
	if err != nil {
		return fmt.Errorf("history: add device %q: %w", dev.Name, err)
	}
	if created == nil {
		created = time.Now().UnixNano()
	}
	expires, err := timeArg(dev.ExpiresAt)
	if err != nil {
		return fmt.Errorf("history: add device %q: %w", dev.Name, err)
	}
	used, err := timeArg(dev.LastUsed)
	if err != nil {
		return fmt.Errorf("history: add device %q: %w", dev.Name, err)
	}
	_, err = d.w.ExecContext(ctx, `INSERT INTO devices (`+deviceColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
		dev.Name, dev.Role, dev.Hash[:], created, expires, used)
	if isConstraint(err) {
		return fmt.Errorf("history: add device %q: %w", dev.Name, history.ErrDeviceExists)
	}
	if err != nil {
		return fmt.Errorf("history: add device %q: %w", dev.Name, err)
	}
	return nil
}

func scanDevice(row scanner) (history.Device, error) {
	var dev history.Device
	var hash []byte
	var created, expires, used sql.NullInt64
	if err := row.Scan(&dev.Name, &dev.Role, &hash, &created, &expires, &used); err != nil {
		return dev, err
	}
	if len(hash) != sha256.Size {
		return dev, fmt.Errorf("device %q has a hash of %d bytes", dev.Name, len(hash))
	}
	copy(dev.Hash[:], hash)
	dev.CreatedAt, dev.ExpiresAt, dev.LastUsed = timeFrom(created), timeFrom(expires), timeFrom(used)
	return dev, nil
}

func (d deviceDB) Devices(ctx context.Context) ([]history.Device, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT `+deviceColumns+` FROM devices ORDER BY created_at, name`)
	return scanAll(rows, err, scanDevice, "history: list devices")
}

func (d deviceDB) DeviceByHash(ctx context.Context, hash [sha256.Size]byte) (history.Device, error) {
	dev, err := scanDevice(d.r.QueryRowContext(ctx, `SELECT `+deviceColumns+` FROM devices WHERE hash = ?`, hash[:]))
	if errors.Is(err, sql.ErrNoRows) {
		return history.Device{}, history.ErrNoDevice
	}
	if err != nil {
		return history.Device{}, fmt.Errorf("history: look up a device: %w", err)
	}
	return dev, nil
}

// RevokeDevice removes the device and, in the same transaction, its Web
// Push subscriptions (push.go).
func (d deviceDB) RevokeDevice(ctx context.Context, name string) error {
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: revoke device %q: %w", name, err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `DELETE FROM push_subscriptions WHERE device = (SELECT hash FROM devices WHERE name = ?)`, name)
	if err != nil && !noPushTable(err) {
		return fmt.Errorf("history: revoke device %q: %w", name, err)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM devices WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("history: revoke device %q: %w", name, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("history: revoke device %q: %w", name, history.ErrNoDevice)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: revoke device %q: %w", name, err)
	}
	return nil
}

func (d deviceDB) TouchDevice(ctx context.Context, name string, at time.Time) error {
	t, err := timeArg(at)
	if err != nil {
		return fmt.Errorf("history: touch device %q: %w", name, err)
	}
	if _, err := d.w.ExecContext(ctx, `UPDATE devices SET last_used = ? WHERE name = ?`, t, name); err != nil {
		return fmt.Errorf("history: touch device %q: %w", name, err)
	}
	return nil
}

// DeviceStore is the devices table of a data dir, for `pilotdesk token`.
type DeviceStore struct {
	deviceDB
	// Shared is true when a relay had the data dir open: the table was
	// opened beside it, and that relay notices changes by itself.
	Shared bool
	close  func() error
}

// Close releases the table (and the store, if it was opened here).
func (d *DeviceStore) Close() error { return d.close() }

// OpenDevices opens the devices table of the data dir dir, whether or not
// a relay has the data dir open: when none does, the history store is
// opened (created or migrated as Open does) for the time of the command;
// when one does, its database is opened beside it, without the data dir's
// lock, which SQLite's own locking makes safe.
func OpenDevices(ctx context.Context, dir string, opts Options) (*DeviceStore, error) {
	opts.SkipCheck = true // a whole-file check is the relay's job at its start
	st, err := Open(ctx, dir, opts)
	if err == nil {
		return &DeviceStore{deviceDB: st.deviceDB, close: st.Close}, nil
	}
	if !errors.Is(err, ErrInUse) {
		return nil, err
	}
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("history: data dir: %w", err)
	}
	path := filepath.Join(abs, FileName)
	db, err := sql.Open("sqlite", dsn(path, opts, false))
	if err != nil {
		return nil, fmt.Errorf("history: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	var version int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		db.Close()
		return nil, classify(path, "reading the schema version", err)
	}
	if version < 2 {
		db.Close()
		return nil, &OpenError{Path: path, Kind: ErrInUse, Detail: "the relay running on it is an older pilotdesk, which keeps no device tokens",
			Fix: "stop it and run this command again"}
	}
	return &DeviceStore{deviceDB: deviceDB{w: db, r: db}, Shared: true, close: db.Close}, nil
}
