package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// schemaV6 adds the Web Push subscriptions (docs/push.md), per device
// token: device is the SHA-256 of the token that subscribed, as in
// devices.hash (or the relay's own token's, which is in no table).
const schemaV6 = `
CREATE TABLE push_subscriptions (
	endpoint   TEXT PRIMARY KEY,
	device     BLOB NOT NULL,
	p256dh     TEXT NOT NULL,
	auth       TEXT NOT NULL,
	text       INTEGER NOT NULL DEFAULT 0,
	created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX push_subscriptions_device ON push_subscriptions (device, created_at);
`

func migrateV6(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, schemaV6)
	return err
}

var _ history.Pushes = deviceDB{}

const pushColumns = `endpoint, device, p256dh, auth, text, created_at`

func (d deviceDB) SavePush(ctx context.Context, s history.PushSubscription) error {
	if err := history.CheckPushEndpoint(s.Endpoint); err != nil {
		return fmt.Errorf("history: save push subscription: %w", err)
	}
	created := s.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: save push subscription: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO push_subscriptions (`+pushColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
		s.Endpoint, s.Device[:], s.P256dh, s.Auth, s.Text, created.UnixNano()); err != nil {
		return fmt.Errorf("history: save push subscription: %w", err)
	}
	// The device's oldest beyond the bound go.
	if _, err := tx.ExecContext(ctx, `DELETE FROM push_subscriptions WHERE device = ? AND endpoint NOT IN
		(SELECT endpoint FROM push_subscriptions WHERE device = ? ORDER BY created_at DESC, endpoint LIMIT ?)`,
		s.Device[:], s.Device[:], history.MaxPushesPerDevice); err != nil {
		return fmt.Errorf("history: save push subscription: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: save push subscription: %w", err)
	}
	return nil
}

func (d deviceDB) PushSubscriptions(ctx context.Context) ([]history.PushSubscription, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT `+pushColumns+` FROM push_subscriptions ORDER BY created_at, endpoint`)
	return scanAll(rows, err, scanPush, "history: list push subscriptions")
}

func scanPush(row scanner) (history.PushSubscription, error) {
	var s history.PushSubscription
	var device []byte
	var created int64
	if err := row.Scan(&s.Endpoint, &device, &s.P256dh, &s.Auth, &s.Text, &created); err != nil {
		return s, err
	}
	if len(device) != sha256.Size {
		return s, fmt.Errorf("%q has a device hash of %d bytes", s.Endpoint, len(device))
	}
	copy(s.Device[:], device)
	s.CreatedAt = time.Unix(0, created)
	return s, nil
}

func (d deviceDB) RemovePush(ctx context.Context, endpoint string) error {
	if _, err := d.w.ExecContext(ctx, `DELETE FROM push_subscriptions WHERE endpoint = ?`, endpoint); err != nil {
		return fmt.Errorf("history: remove a push subscription: %w", err)
	}
	return nil
}

func (d deviceDB) RemoveDevicePushes(ctx context.Context, device [sha256.Size]byte) error {
	if _, err := d.w.ExecContext(ctx, `DELETE FROM push_subscriptions WHERE device = ?`, device[:]); err != nil {
		return fmt.Errorf("history: remove a device's push subscriptions: %w", err)
	}
	return nil
}

// noPushTable reports whether err says the database has no
// push_subscriptions table: `pilotdesk token revoke` beside a running
// relay of a version before it.
func noPushTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table: push_subscriptions")
}
