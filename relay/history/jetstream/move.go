package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// MoveReport is what MoveStreams did.
type MoveReport struct {
	Conversations int // conversations moved out of the first stream
	Messages      int // their messages, copied
	Stayed        int // conversations whose hash names the first stream
}

// MoveStreams spreads a history made with one stream over opts.Streams
// streams, with every relay of the cluster stopped: each conversation whose
// hash names another stream is copied there, message by message in order
// (the same bodies and pilotdesk headers), then the layout is written, and
// only then are the copied subjects purged from the first stream and their
// KV records dropped (the list rebuilds them from the streams). Cut short,
// it is run again: before the layout is written the copies are made anew
// (the history is still one stream's); after, what is left is the purge.
// The history's epoch changes (it is the streams' together), so clients
// replay from 0.
func MoveStreams(ctx context.Context, nc *nats.Conn, opts Options) (MoveReport, error) {
	var rep MoveReport
	want := opts.Streams
	if want < 2 || want > MaxStreams {
		return rep, fmt.Errorf("jetstream history: move to %d streams: want 2 to %d", want, MaxStreams)
	}
	opts.Streams = 0 // open the history as it is
	s, err := Open(ctx, nc, opts)
	if err != nil {
		return rep, err
	}
	defer s.Close()
	if err := s.refuseRunningRelays(ctx); err != nil {
		return rep, err
	}
	switch len(s.shards) {
	case 1:
	case want:
		// The layout was written by a move cut short after it: purge.
		return rep, s.purgeMoved(ctx, &rep)
	default:
		return rep, fmt.Errorf("jetstream history: it is spread over %d streams already, not one: %w", len(s.shards), ErrLayout)
	}
	first := s.shards[0]
	targets := []*shard{first}
	for k := 1; k < want; k++ {
		sh := &shard{names: s.names.shardNames(k)}
		if err := s.openStream(ctx, sh); err != nil {
			return rep, err
		}
		targets = append(targets, sh)
	}
	subjects, err := s.subjectsOf(ctx, first)
	if err != nil {
		return rep, err
	}
	for _, subj := range subjects {
		id, ok := first.idOf(subj)
		if !ok {
			return rep, fmt.Errorf("jetstream history: subject %s of %s is not a conversation's", subj, first.stream)
		}
		k := shardIndex(id, want)
		if k == 0 {
			rep.Stayed++
			continue
		}
		n, err := s.copySubject(ctx, first, targets[k], id)
		if err != nil {
			return rep, fmt.Errorf("jetstream history: copy %q to %s: %w", id, targets[k].stream, err)
		}
		rep.Conversations++
		rep.Messages += n
	}
	b, _ := json.Marshal(layoutValue{Streams: want})
	if err := s.leaderCall(ctx, func(ctx context.Context) error {
		_, err := s.kv.Put(ctx, layoutKey, b)
		return err
	}); err != nil {
		return rep, fmt.Errorf("jetstream history: write the layout: %w", err)
	}
	s.shards = targets
	var purged MoveReport
	return rep, s.purgeMoved(ctx, &purged)
}

// refuseRunningRelays refuses a move while any relay holds a lease: it
// would append to the first stream behind the move's back.
func (s *Store) refuseRunningRelays(ctx context.Context) error {
	name := s.names.extraBucket("pd_relays")
	kv, err := s.js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jetstream history: look for running relays (%s): %w", name, err)
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return fmt.Errorf("jetstream history: look for running relays (%s): %w", name, err)
	}
	n := 0
	for range keys.Keys() {
		n++
	}
	if n > 0 {
		return fmt.Errorf("jetstream history: %d relays hold a lease in %s: stop every relay first (a relay killed rather than stopped holds it for one --nats-lease)", n, name)
	}
	return nil
}

// subjectsOf lists the conversations' subjects of a stream.
func (s *Store) subjectsOf(ctx context.Context, sh *shard) ([]string, error) {
	var info *jetstream.StreamInfo
	if err := s.leaderCall(ctx, func(ctx context.Context) (err error) {
		info, err = sh.st.Info(ctx, jetstream.WithSubjectFilter(sh.subject))
		return err
	}); err != nil {
		return nil, fmt.Errorf("jetstream history: list the subjects of %s: %w", sh.stream, err)
	}
	out := make([]string, 0, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		out = append(out, subj)
	}
	return out, nil
}

// idOf is the conversation of one of the stream's subjects.
func (sh *shard) idOf(subj string) (string, bool) {
	tok, ok := strings.CutPrefix(subj, sh.prefix+".")
	if !ok {
		return "", false
	}
	tok, ok = strings.CutSuffix(tok, ".ev")
	if !ok {
		return "", false
	}
	return idOfToken(tok)
}

// copySubject copies a conversation's messages from one stream to its
// subject in another, in order, each fenced on the one before: whatever
// an earlier attempt left there is purged first. The server's own headers
// (a batch's, an expectation) are left behind: each message is a plain
// publish of its own now.
func (s *Store) copySubject(ctx context.Context, from, to *shard, id string) (int, error) {
	src, dst := from.subjectOf(id), to.subjectOf(id)
	if err := s.leaderCall(ctx, func(ctx context.Context) error {
		return to.st.Purge(ctx, jetstream.WithPurgeSubject(dst))
	}); err != nil {
		return 0, err
	}
	n := 0
	var tail uint64
	for next := uint64(1); ; {
		m, err := s.getMsg(ctx, from.stream, msgGetRequest{Seq: next, NextBySubject: src})
		if errors.Is(err, errNoMessage) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		out := &nats.Msg{Subject: dst, Header: nats.Header{}, Data: m.data}
		for k, v := range m.hdr {
			if !strings.HasPrefix(k, "Nats-") {
				out.Header[k] = v
			}
		}
		out.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(tail, 10))
		var ack *jetstream.PubAck
		if err := s.leaderCall(ctx, func(ctx context.Context) (err error) {
			ack, err = s.js.PublishMsg(ctx, out)
			return err
		}); err != nil {
			return n, err
		}
		tail, next, n = ack.Sequence, m.seq+1, n+1
	}
}

// purgeMoved purges, from the first stream, the conversations whose hash
// names another, and drops their KV records.
func (s *Store) purgeMoved(ctx context.Context, rep *MoveReport) error {
	first := s.shards[0]
	subjects, err := s.subjectsOf(ctx, first)
	if err != nil {
		return err
	}
	for _, subj := range subjects {
		id, ok := first.idOf(subj)
		if !ok || shardIndex(id, len(s.shards)) == 0 {
			continue
		}
		if err := s.leaderCall(ctx, func(ctx context.Context) error {
			return first.st.Purge(ctx, jetstream.WithPurgeSubject(subj))
		}); err != nil {
			return fmt.Errorf("jetstream history: purge %q from %s: %w", id, first.stream, err)
		}
		if err := s.kv.Delete(ctx, token(id)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("jetstream history: drop the record of %q: %w", id, err)
		}
		rep.Conversations++
	}
	return nil
}
