package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// TestWriteAwaitsItsAcksItself: a Write of several conversations on a
// 3-node cluster starts no goroutine for their appends; it sends them all
// and waits for their acks itself (issue #32: a relay's commits started a
// goroutine per conversation, each parking on its own request). Not
// parallel: it counts the goroutines the whole process starts, and the
// nodes are processes of their own.
func TestWriteAwaitsItsAcksItself(t *testing.T) {
	c := natstest.Start(t, 3)
	nc := clusterConn(t, c, 0)
	resetDefault(t, nc)
	s := openR3(t, nc, Options{})
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	const convs, writes = 8, 20
	var ids []string
	var first history.Batch
	for i := range convs {
		id := fmt.Sprintf("c%d", i)
		ids = append(ids, id)
		first.Conversations = append(first.Conversations, meta(id, 1))
		first.Events = append(first.Events, frameEvent(id, 1))
	}
	if err := s.Write(ctx, first); err != nil {
		t.Fatal(err)
	}
	before := goroutinesCreated()
	for seq := int64(2); seq < 2+writes; seq++ {
		var b history.Batch
		for _, id := range ids {
			b.Events = append(b.Events, frameEvent(id, seq))
		}
		if err := s.Write(ctx, b); err != nil {
			t.Fatalf("write %d: %v", seq, err)
		}
	}
	started := goroutinesCreated() - before
	// A goroutine per conversation but one made convs-1 per Write; the
	// bound leaves room for the process's own (the KV syncer's requests,
	// a timer's), none of them per append.
	if started > writes {
		t.Errorf("%d Writes of %d conversations started %d goroutines; want at most %d (none per append)", writes, convs, started, writes)
	}
	for _, id := range ids {
		sameEvents(t, readEvents(t, s, id, 0), frames(id, 1, 1+writes))
	}
}

// TestWriteFailsItsConversationsAsBefore: in one Write of five
// conversations, whose acks are collected together, the second is fenced
// (another writer appended to it) and the fourth's ack is lost: each fails
// alone, as when each append waited for its own ack. The others are
// stored; the fenced one is a conflict; the one whose ack was lost is
// unsure, and the next write of its seqs finds it stored (a conflict, its
// own append) without deleting anything.
func TestWriteFailsItsConversationsAsBefore(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	lose := ""
	a := openEmbedded(t, nc, "amid", Options{LoseAck: func(id string) bool {
		if id != lose {
			return false
		}
		lose = ""
		return true
	}})
	b := openEmbedded(t, nc, "amid", Options{})
	ctx := context.Background()
	ids := []string{"c0", "c1", "c2", "c3", "c4"}
	var first history.Batch
	for _, id := range ids {
		first.Conversations = append(first.Conversations, meta(id, 2))
		first.Events = append(first.Events, frames(id, 1, 2)...)
	}
	if err := a.Write(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c1", 3)}, Events: frames("c1", 3, 3)}); err != nil {
		t.Fatal(err)
	}
	lose = "c3"
	var next history.Batch
	for _, id := range ids {
		next.Conversations = append(next.Conversations, meta(id, 4))
		next.Events = append(next.Events, frames(id, 3, 4)...)
	}
	err := a.Write(ctx, next)
	var pe *history.PartialWriteError
	if !errors.As(err, &pe) || len(pe.Failed) != 2 {
		t.Fatalf("Write = %v; want a PartialWriteError failing c1 and c3", err)
	}
	if !errors.Is(pe.Failed["c1"], history.ErrConflict) {
		t.Errorf("c1 (fenced): %v, want history.ErrConflict", pe.Failed["c1"])
	}
	if e := pe.Failed["c3"]; e == nil || errors.Is(e, history.ErrConflict) || !strings.Contains(e.Error(), "the ack was lost") {
		t.Errorf("c3 (its ack lost): %v, want the lost ack, not a conflict", e)
	}
	for _, id := range []string{"c0", "c2", "c4", "c3"} {
		sameEvents(t, readEvents(t, b, id, 0), frames(id, 1, 4))
	}
	sameEvents(t, readEvents(t, b, "c1", 0), frames("c1", 1, 3))
	// c3's append was stored: the seqs it holds are not free, and nothing
	// was deleted.
	again := frames("c3", 3, 4)
	again[0].Frame = []byte("other bytes")
	err = a.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c3", 4)}, Events: again[:1]})
	if !errors.Is(err, history.ErrConflict) || !errors.Is(err, history.ErrOwnAppendStored) {
		t.Fatalf("the write after c3's lost ack: %v, want history.ErrConflict for its own append stored", err)
	}
	sameEvents(t, readEvents(t, b, "c3", 0), frames("c3", 1, 4))
	// Both go on after what is stored.
	if err := a.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c3", 5)}, Events: frames("c3", 5, 5)}); err != nil {
		t.Fatalf("c3 after what is stored: %v", err)
	}
	if err := a.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c1", 4)}, Events: frames("c1", 4, 4)}); err != nil {
		t.Fatalf("c1 after what is stored: %v", err)
	}
}

// TestFirstAttemptOutcomes: what firstAttempts notes for an append whose
// first attempt nobody takes (nats.ErrNoResponders, as a request says:
// the stream has no leader), and for one whose ack does not come in time
// (context.DeadlineExceeded: appendUnit then retries it as unsure); a late
// ack of that attempt, when it comes, is no other attempt's.
func TestFirstAttemptOutcomes(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	s := openEmbedded(t, nc, "outcomes", Options{})
	ctx := context.Background()
	// A responder that keeps its first request and answers it with the
	// second's ack, late: the second attempt gets seq 8, the first's late
	// ack says 7; later ones get 9.
	var kept *nats.Msg
	n := 0
	sub, err := nc.Subscribe("test.slow", func(m *nats.Msg) {
		n++
		switch n {
		case 1:
			kept = m
		case 2:
			_ = kept.Respond([]byte(`{"seq":7}`))
			_ = m.Respond([]byte(`{"seq":8}`))
		default:
			_ = m.Respond([]byte(`{"seq":9}`))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	job := func(subject string) *commitJob {
		m := &nats.Msg{Subject: subject, Header: nats.Header{}, Data: []byte("x")}
		return &commitJob{w: &convWrite{id: subject, subj: subject}, units: []*unit{{msgs: []*nats.Msg{m}}}}
	}
	nobody, slow := job("test.nobody"), job("test.slow")
	s.firstAttempts(ctx, []*commitJob{nobody, slow}, 0)
	if nobody.first == nil || !errors.Is(nobody.first.err, nats.ErrNoResponders) {
		t.Errorf("no responder: %+v, want nats.ErrNoResponders", nobody.first)
	}
	if slow.first == nil || !errors.Is(slow.first.err, context.DeadlineExceeded) {
		t.Fatalf("no ack in time: %+v (%v), want context.DeadlineExceeded", slow.first, slow.first.err)
	}
	// appendUnit goes on from that outcome: unsure, retried, stored.
	ack, uncertain, err := s.appendUnit(ctx, slow.w, slow.units[0], 0, time.Now().Add(30*time.Second), 0, slow.first)
	if err != nil || ack != 8 || uncertain {
		t.Fatalf("appendUnit after the lost first attempt = %d, %v, %v; want the retry's ack 8", ack, uncertain, err)
	}
	// The first attempt's late ack (7) is in the inbox now: the next
	// Write's attempts are not taken for it.
	again := job("test.slow")
	s.firstAttempts(ctx, []*commitJob{again}, 0)
	if again.first == nil || again.first.err != nil || again.first.ack != 9 {
		t.Fatalf("the attempt after a late ack: %+v, want its own ack, 9", again.first)
	}
}

// TestFirstAttemptHearsTheConnectionClose: an append's first attempt
// whose ack is awaited when the connection closes fails at once with
// nats.ErrConnectionClosed, as a request does, where it waited for its
// ack until the attempt was given up (2 s; here ten minutes): the ack
// inbox's channel is neither closed nor told.
func TestFirstAttemptHearsTheConnectionClose(t *testing.T) {
	t.Parallel()
	e, other := embedded(t)
	nc, err := e.Connect("closing")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	s := openEmbedded(t, nc, "closing", Options{})
	ctx := context.Background()
	held := make(chan *nats.Msg, 1)
	for subject, answer := range map[string]func(*nats.Msg){
		"test.ok":   func(m *nats.Msg) { _ = m.Respond([]byte(`{"seq":1}`)) },
		"test.held": func(m *nats.Msg) { held <- m }, // never answered
	} {
		sub, err := other.Subscribe(subject, answer)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
	}
	if err := other.Flush(); err != nil {
		t.Fatal(err)
	}
	job := func(subject string) *commitJob {
		m := &nats.Msg{Subject: subject, Header: nats.Header{}, Data: []byte("x")}
		return &commitJob{w: &convWrite{id: subject, subj: subject}, units: []*unit{{msgs: []*nats.Msg{m}}}}
	}
	ok := job("test.ok") // subscribes the ack inbox
	s.firstAttempts(ctx, []*commitJob{ok}, 0)
	if ok.first == nil || ok.first.err != nil || ok.first.ack != 1 {
		t.Fatalf("the first attempt answered: %+v", ok.first)
	}

	j := job("test.held")
	j.first = &firstTry{}
	s.acks.mu.Lock() // as a Write holds it
	if err := nc.PublishMsg(&nats.Msg{Subject: "test.held", Reply: s.acks.prefix + "held", Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	wait, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.collectAcks(wait, map[string]*commitJob{"held": j}, time.Now().Add(10*time.Minute))
	}()
	// A failure ends the wait first: the store's Close takes the inbox's lock.
	fail := func(why string) {
		stop()
		<-done
		s.acks.mu.Unlock()
		t.Fatal(why)
	}
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		fail("the attempt never reached its responder")
	}
	nc.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		fail("the attempt still waits for its ack 30 s after the connection closed")
	}
	stop()
	s.acks.mu.Unlock()
	if !errors.Is(j.first.err, nats.ErrConnectionClosed) {
		t.Fatalf("the attempt's outcome: %v, want nats.ErrConnectionClosed", j.first.err)
	}
}
