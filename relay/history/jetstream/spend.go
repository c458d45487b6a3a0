package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// The spend ledger, cluster-wide (history.Ledger), in the KV bucket
// pd_spend: one key per UTC hour with any spend, h.<Unix seconds of the
// hour's start>, whose value is the hour's sum and its latest spend's
// time. So the ledger grows by at most 24 keys a day, like SQLite's table,
// and every relay's spend of an hour adds to the same key.
//
// Two relays adding to the same hour at once must not lose either: each
// addition is a compare-and-set on the key's revision, read from the
// stream's leader, and retried from a fresh read when another relay
// changed the key in between. An addition whose ack was lost may have
// been stored: each value keeps the ids of its last additions, so a retry
// recognises its own and does not count it twice.
//
// Atomicity with the events: the stream and a KV bucket share no
// transaction. Write adds a batch's spend only after every conversation of
// the batch was stored, so a Write that fails (a PartialWriteError
// included) stores none of its spend, as history.Ledger requires; if the
// events were stored and the spend cannot be added within WriteTimeout,
// the store keeps it and adds it with its next Write (it is lost only if
// the process dies first, and then it was never counted: a budget errs
// low by that spend, it never counts one twice).

// spendIDs is how many of its latest additions a ledger entry remembers.
const spendIDs = 16

// spendEntry is the value of an hour's key.
type spendEntry struct {
	At   int64    `json:"at"`   // Unix ns of the latest spend
	Nano int64    `json:"nano"` // the hour's sum, nano AIU
	IDs  []string `json:"ids,omitempty"`
	rev  uint64
}

const spendKeyPrefix = "h."

func spendKey(hour time.Time) string {
	return spendKeyPrefix + strconv.FormatInt(hour.Unix(), 10)
}

func (s *Store) spendKV(ctx context.Context) (jetstream.KeyValue, error) {
	return s.extraBucket(ctx, &s.ext.spend, "pd_spend", "pilotdesk AI credits spent, one key per UTC hour")
}

var _ history.Ledger = (*Store)(nil)

// writeSpend is Write's part for a batch's spend. events says whether the
// batch's events (or conversations) were stored before it: then the Write
// has succeeded, and spend that cannot be added now waits for the next
// Write instead of failing it. A batch of spend alone fails if none of it
// could be added.
func (s *Store) writeSpend(ctx context.Context, spends []history.Spend, events bool) error {
	s.ext.mu.Lock()
	prev := s.ext.pending
	spends = append(slices.Clone(prev), spends...)
	s.ext.pending = nil
	s.ext.mu.Unlock()
	if len(spends) == 0 {
		return nil
	}
	for _, sp := range spends {
		if sp.At.IsZero() {
			return fmt.Errorf("history: write spend: no time")
		}
	}
	// One addition per hour.
	var hours []history.Spend
	for _, sp := range spends {
		hours = history.AddSpend(hours, sp)
	}
	var failed []history.Spend
	var first error
	for _, h := range hours {
		if err := s.addSpend(ctx, h); err != nil {
			failed = append(failed, h)
			if first == nil {
				first = err
			}
		}
	}
	if len(failed) == 0 {
		return nil
	}
	if !events && len(failed) == len(hours) {
		// Nothing was added: the batch's spend goes back to the caller
		// with the error, what this store held back stays with it.
		s.ext.mu.Lock()
		s.ext.pending = append(prev, s.ext.pending...)
		s.ext.mu.Unlock()
		return fmt.Errorf("jetstream history: write spend: %w", first)
	}
	// Part of it is in the ledger, or the batch's events are: the Write
	// stands, and the rest goes with the next one.
	s.ext.mu.Lock()
	s.ext.pending = append(failed, s.ext.pending...)
	s.ext.mu.Unlock()
	s.log.Warn("jetstream history: AI credits spent could not be added to the ledger yet; they go with the next write", "hours", len(failed), "err", first)
	return nil
}

// addSpend adds one hour's spend to its key: compare-and-set, retried.
func (s *Store) addSpend(ctx context.Context, sp history.Spend) error {
	kv, err := s.spendKV(ctx)
	if err != nil {
		return err
	}
	key := spendKey(history.SpendHour(sp.At))
	id := s.writer + "." + strconv.FormatUint(s.appends.Add(1), 10)
	deadline := time.Now().Add(s.opts.WriteTimeout)
	wait := 2 * time.Millisecond
	for {
		cur, err := s.readSpend(ctx, kv, key)
		if err != nil {
			return err
		}
		if slices.Contains(cur.IDs, id) {
			s.noteSpend(key, cur)
			return nil // an earlier attempt was stored; its ack was lost
		}
		next := spendEntry{At: max(cur.At, sp.At.UnixNano()), Nano: cur.Nano + sp.NanoAIU}
		next.IDs = append(next.IDs, cur.IDs[max(0, len(cur.IDs)-spendIDs+1):]...)
		next.IDs = append(next.IDs, id)
		data, err := json.Marshal(next)
		if err != nil {
			return fmt.Errorf("history: write spend: %w", err)
		}
		actx, cancel := context.WithTimeout(ctx, callTimeout)
		if cur.rev == 0 {
			next.rev, err = kv.Create(actx, key, data)
		} else {
			next.rev, err = kv.Update(actx, key, data, cur.rev)
		}
		cancel()
		switch {
		case err == nil:
			s.noteSpend(key, next)
			return nil
		case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			// Another relay added to the hour since it was read (on a
			// cluster 10164 also means one is adding now): read again.
		case passing(err), errors.Is(err, nats.ErrConnectionReconnecting):
			// A leader election, or no answer: the read that follows
			// finds out whether it was stored.
		default:
			return fmt.Errorf("history: write spend: %w", err)
		}
		if ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("history: write spend: gave up: %w", err)
		}
		if err := backOff(ctx, &wait); err != nil {
			return fmt.Errorf("history: write spend: %w", err)
		}
	}
}

func (s *Store) readSpend(ctx context.Context, kv jetstream.KeyValue, key string) (spendEntry, error) {
	e, err := s.leaderGet(ctx, kv, key)
	if err != nil {
		return spendEntry{}, fmt.Errorf("history: read spend: %w", err)
	}
	var cur spendEntry
	if e.rev != 0 {
		if err := json.Unmarshal(e.value, &cur); err != nil {
			return spendEntry{}, fmt.Errorf("history: read spend: a bad entry %s (revision %d): %w", key, e.rev, err)
		}
		cur.rev = e.rev
	}
	return cur, nil
}

// noteSpend remembers the latest entry of an hour this store saw.
func (s *Store) noteSpend(key string, e spendEntry) {
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	if s.ext.spendSeen == nil {
		s.ext.spendSeen = map[string]spendEntry{}
	}
	if e.rev > s.ext.spendSeen[key].rev {
		s.ext.spendSeen[key] = e
	}
}

// Spent returns the ledger's entries since since, oldest first
// (history.Ledger): every relay's spend. It reads the bucket with a
// watcher (one consumer, the hours' latest values), and takes, for an hour
// this store wrote, whichever of its write and the watcher's value is the
// later revision: the watcher's consumer may sit on a replica that lags.
func (s *Store) Spent(ctx context.Context, since time.Time) ([]history.Spend, error) {
	kv, err := s.spendKV(ctx)
	if err != nil {
		return nil, err
	}
	entries, err := s.readKV(ctx, kv, spendKeyPrefix+">")
	if err != nil {
		return nil, fmt.Errorf("history: read spend: %w", err)
	}
	byKey := map[string]spendEntry{}
	for _, e := range entries {
		var v spendEntry
		if err := json.Unmarshal(e.Value(), &v); err != nil {
			return nil, fmt.Errorf("history: read spend: a bad entry %s: %w", e.Key(), err)
		}
		v.rev = e.Revision()
		byKey[e.Key()] = v
	}
	s.ext.mu.Lock()
	for k, v := range s.ext.spendSeen {
		if v.rev > byKey[k].rev {
			byKey[k] = v
		}
	}
	pending := slices.Clone(s.ext.pending)
	s.ext.mu.Unlock()

	// An hour's entry has the hour's key: its At, the latest of its
	// spends, is in that hour (addSpend).
	var out []history.Spend
	for k, v := range byKey {
		if _, err := strconv.ParseInt(strings.TrimPrefix(k, spendKeyPrefix), 10, 64); err != nil {
			return nil, fmt.Errorf("history: read spend: a bad key %q", k)
		}
		out = history.AddSpend(out, history.Spend{At: time.Unix(0, v.At).UTC(), NanoAIU: v.Nano})
	}
	// Spend this store holds for a later write counts already: it was
	// stored with its events.
	for _, sp := range pending {
		out = history.AddSpend(out, sp)
	}
	return slices.DeleteFunc(out, func(e history.Spend) bool { return e.At.Before(since) }), nil
}

// WatchSpend calls changed, from a goroutine of its own, each time any
// relay adds to the ledger, until ctx ends; it returns once the watch is
// set up. The relay's budget reads the ledger once, at start, and then
// counts its own spends: with several relays on one cluster it would
// count the others' only after a restart. A relay that reads Spent again
// when this fires keeps one budget for the whole cluster.
func (s *Store) WatchSpend(ctx context.Context, changed func()) error {
	kv, err := s.spendKV(ctx)
	if err != nil {
		return err
	}
	sw, err := s.startWatch(ctx, kv, spendKeyPrefix+">", jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("history: watch spend: %w", err)
	}
	go sw.follow(ctx, func(e jetstream.KeyValueEntry) {
		if e != nil {
			changed()
		}
	}, changed)
	return nil
}
