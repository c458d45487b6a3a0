package jetstream

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// Live delivery: the owner's events published on the live subjects and
// reassembled here, in order, for the conversations this relay follows;
// deletions told to every relay.

// hdrDeleted marks the notice, on a conversation's live subject, that it
// was deleted (the purge republishes nothing).
const hdrDeleted = "Pd-Deleted"

// Deleted tells every relay that a conversation was deleted: on its
// changes subject, and on its live subject for the relays of an older kind
// (which follow only those).
func (c *Cluster) Deleted(ctx context.Context, id string) {
	for _, subj := range []string{c.changedSubject(token(id)), c.liveSubject(token(id))} {
		m := &nats.Msg{Subject: subj, Header: nats.Header{}}
		m.Header.Set(hdrDeleted, "1")
		if err := c.nc.PublishMsg(m); err != nil {
			c.log.Warn("jetstream cluster: tell the relays of a delete (they learn it from the list meanwhile)", "conversationId", id, "err", err)
		}
	}
}

// Latest reads the conversation's last stored message through the
// stream's leader and makes it the store's expectation for the next
// append: a relay that takes a conversation over appends after what is
// stored, whatever its store saw before.
func (c *Cluster) Latest(ctx context.Context, id string) (history.Conversation, error) {
	st, err := c.s.state(id)
	if err != nil {
		return history.Conversation{}, err
	}
	st.write.Lock()
	defer st.write.Unlock()
	v, err := c.s.readTail(ctx, id)
	if err != nil {
		return history.Conversation{}, fmt.Errorf("jetstream cluster: %w", err)
	}
	c.s.mu.Lock()
	// The stream is the truth: the caller takes what it holds, an append
	// of this store's whose outcome was unsure included, and the next
	// append expects it.
	st.known, st.exists, st.tail, st.rec, st.unsure = true, v.exists, v.tail, v.rec, nil
	// Others may have told changes of it since this store did: its next
	// append, if it takes the conversation over, tells its record anew.
	st.toldOK = false
	c.s.mu.Unlock()
	if !v.exists {
		return history.Conversation{}, history.ErrNotFound
	}
	return v.rec.conversation(), nil
}

// deletedRemote forgets a conversation deleted on another relay (its
// half-received batch, the seqs seen of it) and tells this relay. On
// deliver's goroutine, which owns pending.
func (c *Cluster) deletedRemote(h history.ClusterHooks, tok, id string) {
	delete(c.pending, tok)
	delete(c.records, tok)
	c.s.dropSeen(id)
	h.Deleted(id)
}

// onLive handles one message of a live subject: a stored message as the
// stream republished it, or a delete notice; or of a changes subject
// (onChanged). Events are handed to the
// relay with the record that follows them: the last message of every
// append carries it, and only then is the append whole (an atomic batch
// is republished message by message). On deliver's goroutine.
func (c *Cluster) onLive(m *nats.Msg) {
	tok, ok := c.liveToken(m.Subject)
	if !ok {
		if tok, ok := strings.CutPrefix(m.Subject, c.base+".changed."); ok {
			c.onChanged(tok, m)
		}
		return
	}
	c.liveMsgs.Add(1)
	h := c.hooksNow()
	if h == nil {
		return
	}
	if m.Header.Get(hdrDeleted) != "" {
		if !c.wideNow() {
			return // told on the changes subject too
		}
		id, ok := idOfToken(tok)
		if !ok {
			delete(c.pending, tok)
			return
		}
		c.deletedRemote(h, tok, id)
		return
	}
	streamSeq, _ := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	info, err := parseInfo(m.Header)
	if err != nil {
		c.log.Warn("jetstream cluster: a live message without pilotdesk headers", "subject", m.Subject, "err", err)
		return
	}
	events := c.pending[tok]
	switch info.kind {
	case kindPack:
		id, _ := idOfToken(tok)
		err := unpack(m.Data, func(seq int64, typ string, frame []byte) error {
			events = append(events, history.Event{ConversationID: id, Seq: seq, Type: typ, Frame: frame})
			return nil
		})
		if err != nil {
			c.log.Warn("jetstream cluster: a bad pack on a live subject", "subject", m.Subject, "err", err)
		}
	case kindEvent:
		if info.parts == 1 {
			id, _ := idOfToken(tok)
			events = append(events, history.Event{ConversationID: id, Seq: info.seq, Type: info.typ, Frame: m.Data})
		}
		// A frame in several messages is left to the relay, which reads it
		// from the stream when it sees the gap.
	}
	memo, err := recordAfter(m.Header, m.Data, c.records[tok])
	if err != nil {
		c.log.Warn("jetstream cluster: a bad record on a live subject; the next one shows the gap", "subject", m.Subject, "err", err)
		delete(c.pending, tok)
		return
	}
	if memo == nil {
		// Bounded, whatever a peer publishes: an append whose last message
		// never comes (dropped, or a hostile publisher) would keep its
		// events for ever. What is dropped here the relay reads from the
		// store when the next record shows the gap.
		if _, held := c.pending[tok]; !held && len(c.pending) >= maxPendingConvs {
			clear(c.pending)
		}
		if len(events) > maxPendingEvents {
			events = nil
		}
		c.pending[tok] = events
		return
	}
	delete(c.pending, tok)
	if _, held := c.records[tok]; !held && len(c.records) >= maxRecordMemos {
		clear(c.records) // a memo only saves work: none is lost
	}
	c.records[tok] = memo
	rec := memo.rec
	if streamSeq > 0 {
		c.s.observe(rec.ID, streamSeq, rec)
	}
	h.Stored(rec.ID, events, rec.conversation())
}

// idOfToken is the conversation id of a subject token.
func idOfToken(tok string) (string, bool) {
	if b64, ok := strings.CutPrefix(tok, "b64_"); ok {
		id, err := base64.RawURLEncoding.DecodeString(b64)
		return string(id), err == nil
	}
	return tok, tok != ""
}

// observe notes a message another relay stored (seen on the live
// subject), so that replays read up to it.
func (s *Store) observe(id string, streamSeq uint64, rec record) {
	st, err := s.state(id)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if streamSeq > st.seen {
		st.seen, st.seenRec = streamSeq, rec
	}
}

// dropSeen forgets what was seen of a deleted conversation, and its state:
// the next read looks at the stream.
func (s *Store) dropSeen(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.convs[id]; st != nil {
		st.seen, st.seenRec = 0, record{}
		st.known = false
	}
}

// readView is what a read goes up to: the store's own view, or a later
// message another relay stored.
func (s *Store) readView(st *convState, v view) view {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.seen > v.tail {
		return view{exists: true, tail: st.seen, rec: st.seenRec}
	}
	return v
}

// maxPendingConvs and maxPendingEvents bound Cluster.pending: the
// conversations with an unfinished append, and the events kept of one.
const (
	maxPendingConvs  = 4096
	maxPendingEvents = 4096
)

// maxRecordMemos bounds Cluster.records, whose records may be 8 KiB each
// (a pending question): past it, the memos are dropped and made again.
const maxRecordMemos = 1024
