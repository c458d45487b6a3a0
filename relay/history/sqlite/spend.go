package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// schemaV3 adds the spend ledger (history.Ledger): one row per UTC hour
// with any spend, so the table grows by at most 24 rows a day and is never
// pruned; deleting conversations leaves it alone. hour is the hour's start
// in Unix seconds, last_at the latest spend in it in Unix nanoseconds,
// nano_aiu the hour's sum.
const schemaV3 = `
CREATE TABLE spend (
	hour     INTEGER PRIMARY KEY,
	last_at  INTEGER NOT NULL,
	nano_aiu INTEGER NOT NULL
);
`

func migrateV3(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, schemaV3)
	return err
}

var _ history.Ledger = (*Store)(nil)

const (
	upsertSpendQuery = `INSERT INTO spend (hour, last_at, nano_aiu) VALUES (?, ?, ?)
		ON CONFLICT (hour) DO UPDATE SET nano_aiu = nano_aiu + excluded.nano_aiu, last_at = max(last_at, excluded.last_at)`
	// The hour bound lets SQLite read the primary key's range; last_at
	// then drops the hour that began before since and ended before it too.
	selectSpendQuery = `SELECT last_at, nano_aiu FROM spend WHERE hour >= ? AND last_at >= ? ORDER BY hour`
)

// writeSpend adds a batch's spend to the ledger inside the batch's
// transaction.
func (s *Store) writeSpend(ctx context.Context, tx *sql.Tx, spends []history.Spend) error {
	if len(spends) == 0 {
		return nil
	}
	st := tx.StmtContext(ctx, s.upsertSpend)
	for _, sp := range spends {
		at, err := timeArg(sp.At)
		if err == nil && at == nil {
			err = errors.New("no time")
		}
		if err != nil {
			return fmt.Errorf("history: write spend: %w", err)
		}
		if _, err := st.ExecContext(ctx, history.SpendHour(sp.At).Unix(), at, sp.NanoAIU); err != nil {
			return fmt.Errorf("history: write spend: %w", err)
		}
	}
	return nil
}

// Spent returns the ledger's entries since since (history.Ledger).
func (s *Store) Spent(ctx context.Context, since time.Time) ([]history.Spend, error) {
	hourArg, atArg := int64(math.MinInt64), int64(math.MinInt64) // from the first
	switch {
	case since.After(maxTime):
		return nil, nil
	case !since.Before(minTime):
		hourArg, atArg = history.SpendHour(since).Unix(), since.UnixNano()
	}
	rows, err := s.selectSpend.QueryContext(ctx, hourArg, atArg)
	return scanAll(rows, err, func(row scanner) (history.Spend, error) {
		var at, nano int64
		err := row.Scan(&at, &nano)
		return history.Spend{At: time.Unix(0, at), NanoAIU: nano}, err
	}, "history: read spend")
}
