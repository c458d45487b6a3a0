package history

import (
	"context"
	"slices"
	"time"
)

// Spend is AI credits an agent reported spending (a copilot:quota's
// aiCredits), in nano AI units so that sums are exact: 10^9 make a credit.
type Spend struct {
	At      time.Time
	NanoAIU int64
}

// SpendGranularity is how finely a Ledger keeps spend: the spends of one
// UTC hour make one entry, so that the ledger grows by at most 24 entries a
// day, whatever the number of model calls, and is never pruned.
const SpendGranularity = time.Hour

// Ledger is a store that keeps what was spent, for the relay's credit
// budget (docs/protocol.md, Budget): a Write stores its Batch.Spend in the
// same transaction as its events, so a spend is durable once the
// copilot:quota that reported it is, and a Write that fails stores none of
// it (the relay hands it to a later Write). Spend outlives conversations:
// Delete and DeleteOlderThan leave the ledger as it is. Stores that keep no
// spend do not implement Ledger and ignore Batch.Spend.
type Ledger interface {
	// Spent returns the ledger's entries whose At is not before since,
	// oldest first. An entry is the spend of one UTC hour: NanoAIU is the
	// sum of its spends and At the latest of their times, so an entry
	// counts for as long as its last spend does (up to an hour longer
	// than its first).
	Spent(ctx context.Context, since time.Time) ([]Spend, error)
}

// SpendWatcher is a Ledger that several relays share (the JetStream
// store): it says when any of them adds to it, so that each relay's budget
// counts the others' spend as it happens rather than from its next start.
// Stores that one relay has to itself do not implement it.
type SpendWatcher interface {
	// WatchSpend calls changed, from a goroutine of its own, each time
	// any relay adds to the ledger, until ctx ends; it returns once the
	// watch is set up. changed should read Spent: the watch says only
	// that something changed.
	WatchSpend(ctx context.Context, changed func()) error
}

// SpendHour is the start of the UTC hour a spend at t belongs to.
func SpendHour(t time.Time) time.Time { return t.UTC().Truncate(SpendGranularity) }

// AddSpend adds s to entries, a tally of one entry per UTC hour, oldest
// first, as a Ledger keeps it: to the entry of its hour (NanoAIU summed,
// At the latest of the two), or as a new entry where its hour goes. The
// tally is changed in place where it can be, and returned.
func AddSpend(entries []Spend, s Spend) []Spend {
	hour := SpendHour(s.At)
	i, found := slices.BinarySearchFunc(entries, hour, func(e Spend, h time.Time) int {
		return SpendHour(e.At).Compare(h)
	})
	if !found {
		return slices.Insert(entries, i, s)
	}
	e := &entries[i]
	e.NanoAIU += s.NanoAIU
	if s.At.After(e.At) {
		e.At = s.At
	}
	return entries
}

// Spent returns the spend kept since since (Ledger).
func (m *Memory) Spent(ctx context.Context, since time.Time) ([]Spend, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	// At grows with the hour, so the entries are in At order too.
	i, _ := slices.BinarySearchFunc(m.spend, since, func(e Spend, t time.Time) int {
		if e.At.Before(t) {
			return -1
		}
		return 1
	})
	return slices.Clone(m.spend[i:]), nil
}
