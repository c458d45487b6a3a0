package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The KV records follow the stream: a Write marks its conversations dirty
// and returns once the stream has their events; the syncer writes their
// records then, at most once every kvEvery. Coalescing them this way costs
// a streaming conversation one KV write a kvEvery at most, not one per
// Write, and keeps a KV round trip out of the committer's path.
// Conversations repairs a record the syncer has not written yet from the
// stream, so the lag is never seen.

// kvEvery is the least time between two passes of the syncer. Without it a
// pass began as soon as the last ended, so each record was written once a
// pass over the dirty ones, and a relay with fewer streaming conversations
// made shorter passes and more KV writes per event: three relays sharing
// a load wrote the records about three times as often as one relay (each a
// replicated append on the cluster), which showed in profiles as the
// largest part of their extra CPU (docs/scale-out.md, Relays' CPU).
const kvEvery = time.Second

// kvRetry is how long the syncer waits before it retries records it could
// not write.
const kvRetry = time.Second

// kvDirty marks a conversation's record to be written (or, for a deleted
// conversation, removed) and wakes the syncer.
func (s *Store) kvDirty(id string) {
	s.mu.Lock()
	s.dirty[id] = struct{}{}
	s.mu.Unlock()
	select {
	case s.kvWake <- struct{}{}:
	default:
	}
}

// runKV is the syncer: the store's one goroutine, stopped by Close after a
// last flush.
func (s *Store) runKV() {
	defer close(s.kvDone)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	final := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*s.opts.RequestTimeout)
		s.flushKV(ctx)
		cancel()
	}
	var last time.Time
	for {
		select {
		case <-s.kvStop:
			final()
			return
		case <-s.kvWake:
		case <-retry.C:
		}
		if wait := time.Until(last.Add(kvEvery)); wait > 0 {
			select {
			case <-s.kvStop:
				final()
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 4*s.opts.RequestTimeout)
		if !s.flushKV(ctx) {
			retry.Reset(kvRetry)
		}
		cancel()
	}
}

// flushKV writes every dirty record and reports whether all were written.
// While NATS is away every record fails: one warning says so, at most once
// a minute.
func (s *Store) flushKV(ctx context.Context) bool {
	s.mu.Lock()
	ids := make([]string, 0, len(s.dirty))
	for id := range s.dirty {
		ids = append(ids, id)
	}
	clear(s.dirty)
	s.mu.Unlock()
	failed := 0
	var first error
	for _, id := range ids {
		if err := s.syncRecord(ctx, id); err != nil {
			failed++
			if first == nil {
				first = fmt.Errorf("%q: %w", id, err)
			}
			s.mu.Lock()
			s.dirty[id] = struct{}{}
			s.mu.Unlock()
		}
	}
	if failed == 0 {
		return true
	}
	if time.Since(s.kvWarned) >= time.Minute {
		s.kvWarned = time.Now()
		s.log.Warn("jetstream history: conversation records for the list could not be written; retrying (the list reads the stream meanwhile)", "records", failed, "first", first)
	} else {
		s.log.Debug("jetstream history: conversation records still not written", "records", failed, "first", first)
	}
	return false
}

// syncRecord makes the conversation's KV record what the store last
// appended, or removes it if the conversation is deleted. An update names
// the revision it replaces, and yields to a record of a later append, so
// two relays writing the same record cannot put an older one back.
func (s *Store) syncRecord(ctx context.Context, id string) error {
	st, err := s.state(id)
	if errors.Is(err, errClosed) {
		st, err = s.stateClosing(id)
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	known, exists, rec, rev := st.known, st.exists, st.rec, st.kvRev
	rec.Tail = st.tail
	s.mu.Unlock()
	key := token(id)
	if !known {
		return nil
	}
	if !exists {
		if err := s.kv.Delete(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("delete the record: %w", err)
		}
		return nil
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode the record: %w", err)
	}
	for range 4 {
		if rev == 0 {
			rev, err = s.kv.Create(ctx, key, data)
		} else {
			rev, err = s.kv.Update(ctx, key, data, rev)
		}
		if err == nil {
			break
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		// Someone wrote it since: read theirs, and keep it if it is newer.
		e, gerr := s.kv.Get(ctx, key)
		switch {
		case errors.Is(gerr, jetstream.ErrKeyNotFound):
			rev = 0
			continue
		case gerr != nil:
			return gerr
		}
		var cur record
		if json.Unmarshal(e.Value(), &cur) == nil && cur.Tail > rec.Tail {
			rev, err = e.Revision(), nil
			break
		}
		rev = e.Revision()
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	st.kvRev = rev
	s.mu.Unlock()
	return nil
}

// stateClosing returns a known conversation's state while Close flushes.
func (s *Store) stateClosing(id string) (*convState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.convs[id]; st != nil {
		return st, nil
	}
	return nil, errClosed
}
