package jetstream

import (
	"cmp"
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

// Conversation returns the conversation's record: from this store's own
// last write of it, or else from its subject's last message.
func (s *Store) Conversation(ctx context.Context, id string) (history.Conversation, error) {
	st, err := s.state(id)
	if err != nil {
		return history.Conversation{}, err
	}
	v, err := s.readLoad(ctx, id, st)
	if err != nil {
		return history.Conversation{}, fmt.Errorf("jetstream history: %w", err)
	}
	if !v.exists {
		return history.Conversation{}, history.ErrNotFound
	}
	return v.rec.conversation(), nil
}

// Conversations lists the KV records, repaired from the stream: a
// conversation whose subject holds more messages than its record counts
// (the record was not written yet, or a crash came between the append and
// the record), or whose record is missing, is read from its subject's last
// message; a record whose subject is empty (deleted) is dropped.
func (s *Store) Conversations(ctx context.Context) ([]history.Conversation, error) {
	if _, err := s.state(""); err != nil {
		return nil, err // closed
	}
	recs, err := s.readRecords(ctx) // by token
	if err != nil {
		return nil, fmt.Errorf("jetstream history: list the records: %w", err)
	}
	out := []history.Conversation{}
	for _, sh := range s.shards {
		var info *jetstream.StreamInfo
		err = s.leaderCall(ctx, func(ctx context.Context) (err error) {
			info, err = sh.st.Info(ctx, jetstream.WithSubjectFilter(sh.subject))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("jetstream history: count the conversations' messages in %s: %w", sh.stream, err)
		}
		for subj, n := range info.State.Subjects {
			tok := strings.TrimSuffix(strings.TrimPrefix(subj, sh.prefix+"."), ".ev")
			if id, ok := idOfToken(tok); ok && s.shardOf(id) != sh {
				continue // left behind by a move cut short (MoveStreams): not where the hash looks
			}
			rec, ok := recs[tok]
			delete(recs, tok)
			if !ok || rec.Msgs != n {
				m, err := s.getMsg(ctx, sh.stream, msgGetRequest{LastBySubject: subj})
				if errors.Is(err, errNoMessage) {
					continue // deleted meanwhile
				}
				if err != nil {
					return nil, fmt.Errorf("jetstream history: read the last event of %s: %w", subj, err)
				}
				if rec, ok, err = recordOf(m.hdr, m.data); err != nil || !ok {
					return nil, fmt.Errorf("jetstream history: the last event of %s (stream seq %d) has no record: %v", subj, m.seq, err)
				}
				s.learn(rec.ID, view{exists: true, tail: m.seq, rec: rec})
				s.kvDirty(rec.ID)
			}
			out = append(out, rec.conversation())
		}
	}
	for _, rec := range recs {
		// Deleted from the stream: the syncer drops the record.
		s.learn(rec.ID, view{})
		s.kvDirty(rec.ID)
	}
	slices.SortFunc(out, func(a, b history.Conversation) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	return out, nil
}

// readRecords reads every KV record.
func (s *Store) readRecords(ctx context.Context) (map[string]record, error) {
	entries, err := s.readKV(ctx, s.kv, jetstream.AllKeys)
	if err != nil {
		return nil, err
	}
	recs := map[string]record{}
	for _, e := range entries {
		if isLayoutKey(e.Key()) {
			continue
		}
		var r record
		if err := json.Unmarshal(e.Value(), &r); err != nil {
			s.log.Warn("jetstream history: a bad conversation record in the bucket; reading the stream instead", "key", e.Key(), "err", err)
			continue
		}
		recs[e.Key()] = r
	}
	return recs, nil
}

// learn records what the stream holds of a conversation, unless the store
// knows it already (its own writes are newer than any read).
func (s *Store) learn(id string, v view) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	st := s.convs[id]
	if st == nil {
		st = &convState{}
		s.convs[id] = st
	}
	if !st.known {
		st.known, st.exists, st.tail, st.rec = true, v.exists, v.tail, v.rec
	}
}

// Events replays the conversation's events after since. A conversation
// stored in seq order (the relay's) is read with one consumer from the
// known event nearest to since, or from the first event after since found
// by bisecting the subject on the max header (positions.go); one written
// out of order is indexed from its headers, sorted, and read event by
// event.
func (s *Store) Events(ctx context.Context, id string, since int64, fn func(history.Event) error) error {
	st, err := s.state(id)
	if err != nil {
		return err
	}
	v, err := s.readLoad(ctx, id, st)
	if err != nil {
		return fmt.Errorf("jetstream history: %w", err)
	}
	v = s.readView(st, v)
	if !v.exists || since >= v.rec.Max {
		return nil
	}
	// The history as it was when the read began: its last message is the
	// store's view of the tail. So a read never shows an event that
	// Conversation does not count yet (an append stored whose Write has
	// not returned).
	upTo := v.tail
	sh := s.shardOf(id)
	subj := sh.subjectOf(id)
	if v.rec.Unsorted {
		return s.eventsUnsorted(ctx, id, sh, since, upTo, fn)
	}
	var start uint64
	if p, ok := s.posAtOrBefore(st, since); ok {
		start = p.stream
	} else if since > 0 {
		if start, err = s.startAfter(ctx, sh, subj, since, v.tail); err != nil {
			return fmt.Errorf("jetstream history: find seq %d of %q: %w", since, id, err)
		}
	}
	var (
		cur      history.Event
		curAt    uint64 // stream seq of cur's first message
		need     int    // pieces of cur's frame still to come
		taken    bool
		notedSeq = s.lastPos(st)
	)
	err = s.scan(ctx, sh.stream, subj, start, upTo, func(m scanned) error {
		switch m.info.kind {
		case kindPack:
			return unpack(m.data, func(seq int64, typ string, frame []byte) error {
				if seq >= notedSeq+posEvery {
					notedSeq = seq
					s.mu.Lock()
					s.notePosLocked(st, position{seq, m.seq})
					s.mu.Unlock()
				}
				if seq <= since {
					return nil
				}
				taken = true
				if err := fn(history.Event{ConversationID: id, Seq: seq, Type: typ, Frame: frame}); err != nil {
					// The next stretch starts at this pack.
					s.mu.Lock()
					s.notePosLocked(st, position{seq, m.seq})
					s.mu.Unlock()
					return stopScan{err}
				}
				return nil
			})
		case kindEvent:
			if m.info.seq >= notedSeq+posEvery {
				notedSeq = m.info.seq
				s.mu.Lock()
				s.notePosLocked(st, position{m.info.seq, m.seq})
				s.mu.Unlock()
			}
			if m.info.seq <= since {
				need = 0
				return nil
			}
			cur = history.Event{ConversationID: id, Seq: m.info.seq, Type: m.info.typ, Frame: m.data}
			curAt, need = m.seq, m.info.parts-1
			if need > 0 {
				cur.Frame = make([]byte, len(m.data), m.info.parts*len(m.data))
				copy(cur.Frame, m.data)
				return nil
			}
		case kindPart:
			if need == 0 {
				return nil // a piece of a skipped event
			}
			cur.Frame = append(cur.Frame, m.data...)
			if need--; need > 0 {
				return nil
			}
		default:
			return nil
		}
		taken = true
		if err := fn(cur); err != nil {
			// The next stretch starts here.
			s.mu.Lock()
			s.notePosLocked(st, position{cur.Seq, curAt})
			s.mu.Unlock()
			return stopScan{err}
		}
		return nil
	})
	var stop stopScan
	if errors.As(err, &stop) {
		return stop.err
	}
	if err != nil {
		return fmt.Errorf("jetstream history: replay %q after seq %d: %w", id, since, err)
	}
	if need > 0 && taken {
		return fmt.Errorf("jetstream history: replay %q: event %d ends early", id, cur.Seq)
	}
	return nil
}

func (s *Store) lastPos(st *convState) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastPosLocked(st)
}

// stopScan carries fn's error through scan.
type stopScan struct{ err error }

func (e stopScan) Error() string { return e.err.Error() }

// startAfter returns a stream seq at or before the conversation's first
// event with seq > since (and after every event up to since), given that
// its last message is at tail: the max header never decreases along the
// subject, so the first message whose max exceeds since is found by
// bisecting the stream seqs up to tail, each probe one message get.
func (s *Store) startAfter(ctx context.Context, sh *shard, subj string, since int64, tail uint64) (uint64, error) {
	best := tail
	lo, hi := uint64(1), tail-1
	for lo <= hi && hi != 0 {
		mid := lo + (hi-lo)/2
		m, err := s.getMsgHeaders(ctx, sh.stream, msgGetRequest{Seq: mid, NextBySubject: subj})
		if errors.Is(err, errNoMessage) || err == nil && m.seq > hi {
			hi = mid - 1 // none of the subject's messages in [mid, hi]
			continue
		}
		if err != nil {
			return 0, err
		}
		info, err := parseInfo(m.hdr)
		if err != nil {
			return 0, fmt.Errorf("stream seq %d: %w", m.seq, err)
		}
		if info.max > since {
			best, hi = m.seq, mid-1
		} else {
			lo = m.seq + 1
		}
	}
	return best, nil
}

// eventsUnsorted replays a conversation that was written out of seq order:
// an index of its events from the headers, sorted, then each event read.
func (s *Store) eventsUnsorted(ctx context.Context, id string, sh *shard, since int64, upTo uint64, fn func(history.Event) error) error {
	subj := sh.subjectOf(id)
	type entry struct {
		seq    int64
		stream uint64
		parts  int // a big event's messages; 0: the pack at stream holds it
		typ    string
	}
	var index []entry
	err := s.scan(ctx, sh.stream, subj, 0, upTo, func(m scanned) error {
		switch m.info.kind {
		case kindEvent:
			if m.info.seq > since {
				index = append(index, entry{m.info.seq, m.seq, m.info.parts, m.info.typ})
			}
		case kindPack:
			return unpack(m.data, func(seq int64, typ string, _ []byte) error {
				if seq > since {
					index = append(index, entry{seq, m.seq, 0, typ})
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("jetstream history: index %q: %w", id, err)
	}
	slices.SortFunc(index, func(a, b entry) int { return cmp.Compare(a.seq, b.seq) })
	var pack storedMsg // the last pack read: its neighbours in seq order often share it
	for _, e := range index {
		if e.parts == 0 {
			if pack.seq != e.stream {
				if pack, err = s.getMsg(ctx, sh.stream, msgGetRequest{Seq: e.stream}); err != nil {
					return fmt.Errorf("jetstream history: read event %d of %q: %w", e.seq, id, err)
				}
			}
			var frame []byte
			found := errors.New("found")
			err := unpack(pack.data, func(seq int64, _ string, f []byte) error {
				if seq == e.seq {
					frame = f
					return found
				}
				return nil
			})
			if !errors.Is(err, found) {
				return fmt.Errorf("jetstream history: event %d of %q is not in its pack (%v)", e.seq, id, err)
			}
			if err := fn(history.Event{ConversationID: id, Seq: e.seq, Type: e.typ, Frame: frame}); err != nil {
				return err
			}
			continue
		}
		m, err := s.getMsg(ctx, sh.stream, msgGetRequest{Seq: e.stream})
		if err != nil {
			return fmt.Errorf("jetstream history: read event %d of %q: %w", e.seq, id, err)
		}
		frame := m.data
		for next := m.seq + 1; e.parts > 1; e.parts-- {
			p, err := s.getMsg(ctx, sh.stream, msgGetRequest{Seq: next, NextBySubject: subj})
			if err != nil {
				return fmt.Errorf("jetstream history: read event %d of %q: %w", e.seq, id, err)
			}
			frame = append(frame, p.data...)
			next = p.seq + 1
		}
		if err := fn(history.Event{ConversationID: id, Seq: e.seq, Type: e.typ, Frame: frame}); err != nil {
			return err
		}
	}
	return nil
}

// storedSeqs returns the event seqs stored on the subject up to stream seq
// upTo, from the headers alone.
func (s *Store) storedSeqs(ctx context.Context, stream, subj string, upTo uint64) (map[int64]struct{}, error) {
	seqs := map[int64]struct{}{}
	err := s.scan(ctx, stream, subj, 0, upTo, func(m scanned) error {
		switch m.info.kind {
		case kindEvent:
			seqs[m.info.seq] = struct{}{}
		case kindPack:
			return unpack(m.data, func(seq int64, _ string, _ []byte) error {
				seqs[seq] = struct{}{}
				return nil
			})
		}
		return nil
	})
	return seqs, err
}

// scanned is one message of a scan.
type scanned struct {
	seq  uint64 // stream seq
	info msgInfo
	data []byte
}

// scan reads the subject's messages in stream order, from stream seq start
// (0: the first) to upTo, its last message as the store saw it, with batch
// direct gets: one request returns up to a thousand messages, or about
// readBytes, so a long history of big frames is never held at once, and no
// consumer is created.
//
// Any replica may answer a direct get, and a replica may not have applied
// the latest appends yet: it then answers with a prefix of the history
// (a replica applies the log in order). So the read goes on until it has
// the message at upTo, asking again (the next answer may come from another
// replica, or the same one caught up); the history ends before upTo only if
// the conversation was deleted meanwhile.
func (s *Store) scan(ctx context.Context, stream, subj string, start, upTo uint64, fn func(scanned) error) error {
	next := max(start, 1)
	var lagSince time.Time
	for next <= upTo {
		last, err := s.directBatch(ctx, stream, subj, next, upTo, fn)
		if err != nil {
			return err
		}
		if last >= upTo {
			return nil
		}
		if last >= next {
			next, lagSince = last+1, time.Time{}
			continue
		}
		// Nothing at or after next on the replica that answered.
		if lagSince.IsZero() {
			lagSince = time.Now()
		} else if time.Since(lagSince) > s.opts.RequestTimeout {
			if _, err := s.getMsgHeaders(ctx, stream, msgGetRequest{Seq: upTo}); errors.Is(err, errNoMessage) {
				return nil // deleted meanwhile
			}
			return fmt.Errorf("no replica has stream seq %d of %s after %v", upTo, subj, s.opts.RequestTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// directBatch asks for the subject's messages from stream seq next and
// passes those up to upTo to fn. It returns the stream seq of the last one
// it passed (0: none).
func (s *Store) directBatch(ctx context.Context, stream, subj string, next, upTo uint64, fn func(scanned) error) (last uint64, err error) {
	req, err := json.Marshal(struct {
		Seq      uint64 `json:"seq"`
		NextBy   string `json:"next_by_subj"`
		Batch    int    `json:"batch"`
		MaxBytes int    `json:"max_bytes"`
	}{next, subj, 1000, s.readBytes})
	if err != nil {
		return 0, err
	}
	inbox := nats.NewInbox()
	sub, err := s.nc.SubscribeSync(inbox)
	if err != nil {
		return 0, fmt.Errorf("direct get: %w", err)
	}
	defer sub.Unsubscribe()
	if err := s.nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, req); err != nil {
		return 0, fmt.Errorf("direct get: %w", err)
	}
	for {
		mctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
		msg, err := sub.NextMsgWithContext(mctx)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return last, nil // asked again by scan
			}
			return last, fmt.Errorf("direct get: %w", err)
		}
		if status := msg.Header.Get("Status"); status != "" {
			switch status {
			case "204", "404": // the end of the batch; nothing at or after next
				return last, nil
			case "503": // no responders: a new stream's replicas not listening yet
				return last, nil
			default:
				return last, fmt.Errorf("direct get: status %s %s", status, msg.Header.Get("Description"))
			}
		}
		seq, err := strconv.ParseUint(msg.Header.Get(jetstream.SequenceHeader), 10, 64)
		if err != nil {
			return last, fmt.Errorf("direct get: a message with no sequence: %w", err)
		}
		if seq > upTo {
			return last, nil
		}
		info, err := parseInfo(msg.Header)
		if err != nil {
			return last, fmt.Errorf("stream seq %d: %w", seq, err)
		}
		if err := fn(scanned{seq: seq, info: info, data: msg.Data}); err != nil {
			return last, err
		}
		last = seq
	}
}

// Delete purges the conversation's subject, then its KV record.
func (s *Store) Delete(ctx context.Context, id string) error {
	st, err := s.state(id)
	if err != nil {
		return err
	}
	st.write.Lock()
	defer st.write.Unlock()
	return s.deleteWriteLocked(ctx, id, st)
}

// deleteWriteLocked deletes a conversation; the caller holds st.write
// (the conversation's write lock, not s.mu).
func (s *Store) deleteWriteLocked(ctx context.Context, id string, st *convState) error {
	if err := s.leaderCall(ctx, func(ctx context.Context) error {
		sh := s.shardOf(id)
		return sh.st.Purge(ctx, jetstream.WithPurgeSubject(sh.subjectOf(id)))
	}); err != nil {
		return fmt.Errorf("jetstream history: delete %q: %w", id, err)
	}
	s.mu.Lock()
	st.known, st.exists, st.tail, st.rec, st.unsure, st.kvRev = true, false, 0, record{}, nil, 0
	st.pos, st.toldOK = nil, false
	delete(s.dirty, id)
	s.mu.Unlock()
	if err := s.kv.Delete(ctx, token(id)); err != nil {
		// The stream no longer has it, which is what counts; the syncer
		// drops the record later (its title is text of the conversation).
		s.log.Warn("jetstream history: could not delete a conversation's record; retrying in the background", "conversationId", id, "err", err)
		s.kvDirty(id)
	}
	return nil
}

// DeleteOlderThan deletes the conversations last updated before cutoff
// (--history-max-age) and returns how many it deleted.
func (s *Store) DeleteOlderThan(ctx context.Context, cutoff time.Time) (int, error) {
	cs, err := s.Conversations(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range cs {
		if !c.UpdatedAt.Before(cutoff) {
			continue
		}
		deleted, err := s.deleteIfOlder(ctx, c.ID, cutoff)
		if err != nil {
			return n, err
		}
		if deleted {
			n++
		}
	}
	return n, nil
}

func (s *Store) deleteIfOlder(ctx context.Context, id string, cutoff time.Time) (bool, error) {
	st, err := s.state(id)
	if err != nil {
		return false, err
	}
	st.write.Lock()
	defer st.write.Unlock()
	v, err := s.load(ctx, id, st)
	if err != nil {
		return false, fmt.Errorf("jetstream history: %w", err)
	}
	if !v.exists || !v.rec.UpdatedAt.Before(cutoff) {
		return false, nil // touched meanwhile
	}
	return true, s.deleteWriteLocked(ctx, id, st)
}
