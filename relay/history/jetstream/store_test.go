package jetstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/historytest"
)

// embedded starts an in-process node in a temporary dir and connects to it.
func embedded(t *testing.T) (*Embedded, *nats.Conn) {
	t.Helper()
	e, err := StartEmbedded(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	nc, err := e.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return e, nc
}

// TestEmbeddedConformance runs the history conformance suite on one
// in-process node (R1), each store in a namespace of its own.
func TestEmbeddedConformance(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	n := 0
	historytest.Run(t, func(t *testing.T) history.Store {
		n++
		s, err := Open(context.Background(), nc, withStreams(t, Options{Replicas: 1, Namespace: fmt.Sprintf("c%d", n)}))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func openEmbedded(t *testing.T, nc *nats.Conn, ns string, opts Options) *Store {
	t.Helper()
	opts.Replicas, opts.Namespace = 1, ns
	s, err := Open(context.Background(), nc, withStreams(t, opts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func readEvents(t *testing.T, s *Store, id string, since int64) []history.Event {
	t.Helper()
	var out []history.Event
	if err := s.Events(context.Background(), id, since, func(e history.Event) error {
		out = append(out, e)
		return nil
	}); err != nil {
		t.Fatalf("Events(%q, %d): %v", id, since, err)
	}
	return out
}

func sameEvents(t *testing.T, got, want []history.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Seq != want[i].Seq || got[i].Type != want[i].Type || !bytes.Equal(got[i].Frame, want[i].Frame) {
			t.Fatalf("event %d: got seq %d %s (%d bytes), want seq %d %s (%d bytes)", i, got[i].Seq, got[i].Type, len(got[i].Frame), want[i].Seq, want[i].Type, len(want[i].Frame))
		}
	}
}

func meta(id string, last int64) history.Conversation {
	return history.Conversation{ID: id, Title: "t " + id, Mode: "act", LastSeq: last, UpdatedAt: time.Unix(1700000000+last, 0)}
}

// TestFencedConversationFailsAlone: a store whose view of one conversation
// is stale (another store appended to it) is refused for that conversation
// only; the other conversation of the same batch is stored.
func TestFencedConversationFailsAlone(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	a := openEmbedded(t, nc, "fence", Options{})
	b := openEmbedded(t, nc, "fence", Options{})
	ctx := context.Background()
	write := func(s *Store, b history.Batch) error { return s.Write(ctx, b) }
	if err := write(a, history.Batch{Conversations: []history.Conversation{meta("c", 3), meta("d", 3)},
		Events: append(frames("c", 1, 3), frames("d", 1, 3)...)}); err != nil {
		t.Fatal(err)
	}
	// b takes c over: it reads c's tail and appends.
	if err := write(b, history.Batch{Conversations: []history.Conversation{meta("c", 4)}, Events: frames("c", 4, 4)}); err != nil {
		t.Fatal(err)
	}
	// a, which does not know, appends to both.
	err := write(a, history.Batch{Conversations: []history.Conversation{meta("c", 5), meta("d", 4)},
		Events: append(frames("c", 5, 5), frames("d", 4, 4)...)})
	var pe *history.PartialWriteError
	if !errors.As(err, &pe) || len(pe.Failed) != 1 || !errors.Is(pe.Failed["c"], history.ErrConflict) {
		t.Fatalf("Write = %v; want a PartialWriteError failing c alone with ErrConflict", err)
	}
	t.Logf("the fenced write: %v", err)
	sameEvents(t, readEvents(t, b, "d", 0), frames("d", 1, 4))
	sameEvents(t, readEvents(t, b, "c", 0), frames("c", 1, 4))
	if c, err := b.Conversation(ctx, "c"); err != nil || c.LastSeq != 4 {
		t.Fatalf("c = %+v, %v; want b's record", c, err)
	}
}

// TestStoredSeqIsAConflictOfItsConversation: a store that knows another
// writer stored seqs it hands out again (a stale relay's append landed
// after this relay took the conversation over and read it) is refused for
// that conversation only, with history.ErrConflict, so the relay takes the
// stream's history as after a fence; the batch is not invalid as a whole.
// (It was: the relay retried the same batch for good, its other
// conversations' turns stopped with it, and sends stayed refused: a
// clean-clone make test's relay-partition run, seed 6.)
func TestStoredSeqIsAConflictOfItsConversation(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	a := openEmbedded(t, nc, "stale", Options{})
	b := openEmbedded(t, nc, "stale", Options{})
	ctx := context.Background()
	if err := a.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c", 3), meta("d", 3)},
		Events: append(frames("c", 1, 3), frames("d", 1, 3)...)}); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c", 4)}, Events: frames("c", 4, 4)}); err != nil {
		t.Fatal(err)
	}
	// a's first try at seq 4 is fenced, and a forgets its view of c...
	again := frames("c", 4, 4)
	again[0].Frame = []byte("a's own event 4")
	if err := a.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c", 4)}, Events: again}); !errors.Is(err, history.ErrConflict) {
		t.Fatalf("the stale write: %v, want history.ErrConflict", err)
	}
	// ...so it reads c's tail afresh when the same seq comes again.
	err := a.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c", 4), meta("d", 4)},
		Events: append(again, frames("d", 4, 4)...)})
	var pe *history.PartialWriteError
	if !errors.As(err, &pe) || len(pe.Failed) != 1 || !errors.Is(pe.Failed["c"], history.ErrConflict) {
		t.Fatalf("Write = %v; want a PartialWriteError failing c alone with ErrConflict", err)
	}
	sameEvents(t, readEvents(t, a, "c", 0), frames("c", 1, 4))
	sameEvents(t, readEvents(t, a, "d", 0), frames("d", 1, 4))
	// The writer goes on after what is stored.
	if err := a.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c", 5)}, Events: frames("c", 5, 5)}); err != nil {
		t.Fatalf("the write after the stored seqs: %v", err)
	}
	fresh := openEmbedded(t, nc, "stale", Options{})
	sameEvents(t, readEvents(t, fresh, "c", 0), frames("c", 1, 5))
}

func frames(id string, from, to int64) []history.Event {
	var out []history.Event
	for seq := from; seq <= to; seq++ {
		out = append(out, frameEvent(id, seq))
	}
	return out
}

// TestLostAckResolved: an append is stored but its ack is lost, and the
// Write fails after its retries. The stream may have republished it and
// clients may hold its events, so nothing is deleted: reads show it at
// once, and the next write, which hands the same seqs out again, is refused
// with history.ErrConflict (the relay then takes the stream's history, as
// after a takeover), and the seqs stay those of the stored events. The
// write after the writer has taken the stream's state goes on after them.
// (Before, the store deleted the stored append: a hole in what clients had
// got, and the same seqs stored again with other bytes.)
func TestLostAckResolved(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	lose := false
	s := openEmbedded(t, nc, "lost", Options{LoseAck: func(string) bool { l := lose; lose = false; return l }})
	ctx := context.Background()
	if err := s.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c", 2)}, Events: frames("c", 1, 2)}); err != nil {
		t.Fatal(err)
	}
	lose = true
	if err := s.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c", 5)}, Events: frames("c", 3, 5)}); err == nil {
		t.Fatal("the write with a lost ack succeeded")
	}
	// What is stored is shown, the unsure append's events included.
	sameEvents(t, readEvents(t, s, "c", 0), frames("c", 1, 5))
	if c, _ := s.Conversation(ctx, "c"); c.LastSeq != 5 {
		t.Fatalf("LastSeq %d after the failed write, want 5 (what the stream holds)", c.LastSeq)
	}
	// The seqs handed out again are refused, and nothing is deleted.
	again := frames("c", 3, 4)
	for i := range again {
		again[i].Frame = []byte("other bytes")
	}
	err := s.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c", 4)}, Events: again})
	if !errors.Is(err, history.ErrConflict) {
		t.Fatalf("the write reusing the seqs of the stored append: %v, want history.ErrConflict", err)
	}
	sameEvents(t, readEvents(t, s, "c", 0), frames("c", 1, 5))
	// The writer goes on after what is stored.
	if err := s.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c", 6)}, Events: frames("c", 6, 6)}); err != nil {
		t.Fatalf("the write after the stored seqs: %v", err)
	}
	fresh := openEmbedded(t, nc, "lost", Options{})
	sameEvents(t, readEvents(t, fresh, "c", 0), frames("c", 1, 6))
	cs, err := fresh.Conversations(ctx)
	if err != nil || len(cs) != 1 || cs[0].LastSeq != 6 {
		t.Fatalf("Conversations = %+v, %v", cs, err)
	}
}

// TestUnsureAppendNotStored: an append whose outcome is unsure and that the
// stream does not hold leaves its seqs free: the next write, reading the
// subject first, finds nothing after the append's expectation and goes on.
func TestUnsureAppendNotStored(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	s := openEmbedded(t, nc, "unsure", Options{})
	ctx := context.Background()
	if err := s.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c", 2)}, Events: frames("c", 1, 2)}); err != nil {
		t.Fatal(err)
	}
	st, err := s.state("c")
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	st.unsure = &undo{before: st.tail, append: "gone/"}
	s.mu.Unlock()
	sameEvents(t, readEvents(t, s, "c", 0), frames("c", 1, 2))
	if err := s.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c", 4)}, Events: frames("c", 3, 4)}); err != nil {
		t.Fatalf("the write after an unsure append that was not stored: %v", err)
	}
	sameEvents(t, readEvents(t, s, "c", 0), frames("c", 1, 4))
}

// TestFreshStoreReads reads, with a store that wrote nothing (so it knows
// no positions), histories written by another: a long one interleaved with
// others, read from many points (bisection), one with frames split over
// several messages, and one written out of seq order.
func TestFreshStoreReads(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	w := openEmbedded(t, nc, "fresh", Options{})
	ctx := context.Background()
	var long, other []history.Event
	for seq := int64(1); seq <= 1500; seq += 10 {
		b := history.Batch{Conversations: []history.Conversation{meta("long", seq+9), meta("other", seq+9)},
			Events: append(frames("long", seq, seq+9), frames("other", seq, seq+9)...)}
		if err := w.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
		long, other = append(long, frames("long", seq, seq+9)...), append(other, frames("other", seq, seq+9)...)
	}
	big := []history.Event{frameEvent("big", 1), {ConversationID: "big", Seq: 2, Type: "copilot:tool_output", Frame: bytes.Repeat([]byte("abcdefgh"), 3<<20/8)}, frameEvent("big", 3)}
	if err := w.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("big", 3)}, Events: big}); err != nil {
		t.Fatal(err)
	}
	oddBig := big[1]
	oddBig.ConversationID, oddBig.Seq = "odd", 5
	if err := w.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("odd", 9)}, Events: []history.Event{frameEvent("odd", 9), frameEvent("odd", 2)}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, history.Batch{Events: []history.Event{oddBig}}); err != nil {
		t.Fatal(err)
	}
	odd := []history.Event{frameEvent("odd", 2), oddBig, frameEvent("odd", 9)}

	r := openEmbedded(t, nc, "fresh", Options{})
	for _, since := range []int64{1499, 0, 1, 63, 64, 65, 777, 1234, 1500, 2000} {
		want := long[min(int(max(since, 0)), len(long)):]
		sameEvents(t, readEvents(t, r, "long", since), want)
	}
	sameEvents(t, readEvents(t, r, "other", 700), other[700:])
	sameEvents(t, readEvents(t, r, "big", 0), big)
	sameEvents(t, readEvents(t, r, "big", 1), big[1:])
	sameEvents(t, readEvents(t, r, "big", 2), big[2:])
	sameEvents(t, readEvents(t, r, "odd", 0), odd)
	sameEvents(t, readEvents(t, r, "odd", 4), odd[1:])
}

// TestListRepairsRecords: the KV records are an index that may lag the
// stream (a crash between an append and its record); Conversations reads
// the stream for a record that counts fewer messages than its subject, or
// is missing, and drops one whose conversation is gone.
func TestListRepairsRecords(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	ctx := context.Background()
	w := openEmbedded(t, nc, "repair", Options{})
	for _, id := range []string{"fresh", "stale", "missing", "gone", "odd id/with spaces"} {
		if err := w.Write(ctx, history.Batch{Conversations: []history.Conversation{meta(id, 2)}, Events: frames(id, 1, 2)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil { // writes the records
		t.Fatal(err)
	}
	kv := w.kv
	staleRec, err := kv.Get(ctx, token("stale"))
	if err != nil {
		t.Fatalf("the record of a written conversation: %v", err)
	}
	if _, err := kv.Get(ctx, token("odd id/with spaces")); err != nil {
		t.Fatalf("the record of an id with spaces: %v", err)
	}
	// Later appends whose records never reach the bucket (the process
	// dies): stale's record is kept as it was, missing's is removed, gone's
	// subject is purged with its record left behind.
	w2 := openEmbedded(t, nc, "repair", Options{})
	if err := w2.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("stale", 5)}, Events: frames("stale", 3, 5)}); err != nil {
		t.Fatal(err)
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, token("stale"), staleRec.Value()); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, token("missing")); err != nil {
		t.Fatal(err)
	}
	if err := w2.shardOf("gone").st.Purge(ctx, jetstream.WithPurgeSubject(w2.subjectOf("gone"))); err != nil {
		t.Fatal(err)
	}

	r := openEmbedded(t, nc, "repair", Options{})
	cs, err := r.Conversations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, c := range cs {
		got[c.ID] = c.LastSeq
	}
	want := map[string]int64{"fresh": 2, "stale": 5, "missing": 2, "odd id/with spaces": 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Conversations: %v, want %v", got, want)
	}
	// The list repaired the bucket too (the syncer, at Close at the latest).
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, token("gone")); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("the record of a deleted conversation: %v, want it gone", err)
	}
	for id, last := range want {
		e, err := kv.Get(ctx, token(id))
		if err != nil {
			t.Fatalf("record of %q: %v", id, err)
		}
		var rec record
		if err := json.Unmarshal(e.Value(), &rec); err != nil || rec.LastSeq != last || rec.ID != id {
			t.Errorf("record of %q: %+v, %v; want LastSeq %d", id, rec, err, last)
		}
	}
}

// TestRecordWritesPaced: a conversation appended to a hundred times in a
// row gets its KV record written about once a kvEvery, not once an
// append: each record write is a replicated append of its own, and a pass
// per append made three relays sharing a load write three times as many
// as one relay did.
func TestRecordWritesPaced(t *testing.T) {
	_, nc := embedded(t)
	ctx := context.Background()
	s := openEmbedded(t, nc, "paced", Options{})
	start := time.Now()
	if err := s.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("p", 1)}, Events: frames("p", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	e, err := recordEntry(t, s, 1)
	if err != nil {
		t.Fatal(err)
	}
	first := e.Revision()
	const appends = 100
	for seq := int64(2); seq <= appends+1; seq++ {
		if err := s.Write(ctx, history.Batch{Events: frames("p", seq, seq)}); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	e, err = recordEntry(t, s, appends+1) // the record of the last append: a message an append
	if err != nil {
		t.Fatal(err)
	}
	writes := e.Revision() - first
	if limit := uint64(took/kvEvery) + 3; writes > limit {
		t.Fatalf("%d record writes for %d appends in %v; want at most %d (one a %v)", writes, appends, took.Round(time.Millisecond), limit, kvEvery)
	}
	t.Logf("%d record writes for %d appends in %v", writes, appends, took.Round(time.Millisecond))
}

// recordEntry waits (up to 30 s) until the conversation p's record in the
// bucket counts msgs messages, and returns it.
func recordEntry(t *testing.T, s *Store, msgs uint64) (jetstream.KeyValueEntry, error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		e, err := s.kv.Get(context.Background(), token("p"))
		if err == nil {
			var r record
			if err := json.Unmarshal(e.Value(), &r); err != nil {
				return nil, err
			}
			if r.Msgs >= msgs {
				return e, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the record of p does not count %d messages after 30 s (%v)", msgs, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
