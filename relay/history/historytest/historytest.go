// Package historytest is the conformance suite every history.Store must
// pass: the in-memory store and the SQLite store run the same checks, so the
// relay can rely on one behaviour whichever store it is given.
package historytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// OlderThanDeleter is implemented by stores that support retention
// (--history-max-age); Run checks it when the store has it.
type OlderThanDeleter interface {
	DeleteOlderThan(ctx context.Context, cutoff time.Time) (int, error)
}

// Run checks every contract of history.Store. open must return a new, empty
// store each time it is called; Run closes each store it opens.
func Run(t *testing.T, open func(t *testing.T) history.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s history.Store)
	}{
		{"Epoch", testEpoch},
		{"Empty", testEmpty},
		{"ConversationRoundTrip", testConversationRoundTrip},
		{"ConversationUpsert", testConversationUpsert},
		{"ConversationsOrder", testConversationsOrder},
		{"EventsOrderAndSince", testEventsOrderAndSince},
		{"EventsOutOfOrderWrites", testEventsOutOfOrderWrites},
		{"EventsStopOnError", testEventsStopOnError},
		{"EventsLongHistory", testEventsLongHistory},
		{"EventsWriteFromCallback", testEventsWriteFromCallback},
		{"EventsFramesStayValid", testEventsFramesStayValid},
		{"EventsInStretches", testEventsInStretches},
		{"EventsStream", testEventsStream},
		{"BatchAtomicDuplicateStored", testBatchAtomicDuplicateStored},
		{"BatchAtomicDuplicateInBatch", testBatchAtomicDuplicateInBatch},
		{"BatchAtomicUnknownConversation", testBatchAtomicUnknownConversation},
		{"EmptyBatch", testEmptyBatch},
		{"Delete", testDelete},
		{"DeleteThenRecreate", testDeleteThenRecreate},
		{"DeleteOlderThan", testDeleteOlderThan},
		{"Concurrent", testConcurrent},
		{"SpendByHour", testSpendByHour},
		{"SpendSince", testSpendSince},
		{"SpendAtomic", testSpendAtomic},
		{"SpendOutlivesConversations", testSpendOutlivesConversations},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			defer func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			tc.fn(t, s)
		})
	}
}

// base is a fixed instant so that times compare exactly; the nanoseconds
// check that a store keeps full precision.
var base = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)

func conv(id string, updated time.Duration) history.Conversation {
	return history.Conversation{
		ID:        id,
		Title:     "title of " + id,
		Mode:      "plan",
		CreatedAt: base,
		UpdatedAt: base.Add(updated),
		Model:     "gpt-5",
		Agent:     "demo (scripted)",
	}
}

func event(convID string, seq int64) history.Event {
	typ := "copilot:delta"
	if seq%10 == 0 {
		typ = "copilot:idle"
	}
	return history.Event{
		ConversationID: convID,
		Seq:            seq,
		Type:           typ,
		Frame:          fmt.Appendf(nil, `{"type":%q,"data":{"conversationId":%q,"seq":%d,"content":"x"}}`, typ, convID, seq),
	}
}

func events(convID string, from, to int64) []history.Event {
	var out []history.Event
	for seq := from; seq <= to; seq++ {
		out = append(out, event(convID, seq))
	}
	return out
}

func write(t *testing.T, s history.Store, b history.Batch) {
	t.Helper()
	if err := s.Write(context.Background(), b); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func readAll(t *testing.T, s history.Store, convID string, since int64) []history.Event {
	t.Helper()
	var out []history.Event
	if err := s.Events(context.Background(), convID, since, func(e history.Event) error {
		out = append(out, e)
		return nil
	}); err != nil {
		t.Fatalf("Events(%q, %d): %v", convID, since, err)
	}
	return out
}

// checkEvents compares events field by field, saying where they differ.
func checkEvents(t *testing.T, got, want []history.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d (got seqs %v)", len(got), len(want), seqs(got))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ConversationID != w.ConversationID || g.Seq != w.Seq || g.Type != w.Type || !bytes.Equal(g.Frame, w.Frame) {
			t.Fatalf("event %d: got {%q %d %q %s}, want {%q %d %q %s}", i,
				g.ConversationID, g.Seq, g.Type, g.Frame, w.ConversationID, w.Seq, w.Type, w.Frame)
		}
	}
}

func seqs(evs []history.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

// CheckConversation reports whether two conversations hold the same
// values (times compared as instants, nil and empty PendingInput alike).
func CheckConversation(t *testing.T, got, want history.Conversation) {
	t.Helper()
	if got.ID != want.ID || got.Title != want.Title || got.Mode != want.Mode ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) ||
		got.LastSeq != want.LastSeq || got.Streaming != want.Streaming ||
		!bytes.Equal(got.PendingInput, want.PendingInput) || got.Model != want.Model || got.Agent != want.Agent ||
		got.Workspace != want.Workspace {
		t.Fatalf("conversation:\n got %+v\nwant %+v", got, want)
	}
}

func getConv(t *testing.T, s history.Store, id string) history.Conversation {
	t.Helper()
	c, err := s.Conversation(context.Background(), id)
	if err != nil {
		t.Fatalf("Conversation(%q): %v", id, err)
	}
	return c
}

func wantNotFound(t *testing.T, s history.Store, id string) {
	t.Helper()
	if c, err := s.Conversation(context.Background(), id); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("Conversation(%q) = %+v, %v; want ErrNotFound", id, c, err)
	}
}

func listIDs(t *testing.T, s history.Store) []string {
	t.Helper()
	cs, err := s.Conversations(context.Background())
	if err != nil {
		t.Fatalf("Conversations: %v", err)
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids
}

func testEpoch(t *testing.T, s history.Store) {
	e := s.Epoch()
	if e == "" {
		t.Fatal("empty epoch")
	}
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("c1", 0)}, Events: events("c1", 1, 3)})
	if got := s.Epoch(); got != e {
		t.Fatalf("epoch changed from %q to %q after a write", e, got)
	}
}

func testEmpty(t *testing.T, s history.Store) {
	if ids := listIDs(t, s); len(ids) != 0 {
		t.Fatalf("new store lists %v", ids)
	}
	wantNotFound(t, s, "nope")
	if evs := readAll(t, s, "nope", 0); len(evs) != 0 {
		t.Fatalf("events of an unknown conversation: %v", seqs(evs))
	}
	if err := s.Delete(context.Background(), "nope"); err != nil {
		t.Fatalf("Delete of an unknown conversation: %v", err)
	}
}

func testConversationRoundTrip(t *testing.T, s history.Store) {
	c := history.Conversation{
		ID:           "c-round-trip",
		Title:        "Fix the \"flaky\" test — ünïcødé ✓",
		Mode:         "act",
		CreatedAt:    base,
		UpdatedAt:    base.Add(90 * time.Minute),
		LastSeq:      7,
		Streaming:    true,
		PendingInput: []byte(`{"conversationId":"c-round-trip","seq":7,"requestId":"r1","question":"Proceed?"}`),
		Model:        "claude-sonnet-4.5",
		Agent:        "OpenCode (ACP) — ünïcødé",
		Workspace: history.Workspace{Path: "/home/ü/proj/sub", Isolation: "worktree", Dir: "/data/worktrees/proj-c-round-/sub",
			Branch: "pilotdesk/c-round-", Base: "0123456789abcdef0123456789abcdef01234567", Worktree: "/data/worktrees/proj-c-round-"},
	}
	write(t, s, history.Batch{Conversations: []history.Conversation{c}, Events: events(c.ID, 1, 7)})
	CheckConversation(t, getConv(t, s, c.ID), c)
	cs, err := s.Conversations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 {
		t.Fatalf("Conversations: %d, want 1", len(cs))
	}
	CheckConversation(t, cs[0], c)

	// A zero time and no pending input also survive.
	z := history.Conversation{ID: "c-zero", Mode: "plan"}
	write(t, s, history.Batch{Conversations: []history.Conversation{z}})
	got := getConv(t, s, z.ID)
	CheckConversation(t, got, z)
	if !got.CreatedAt.IsZero() || !got.UpdatedAt.IsZero() {
		t.Fatalf("zero times came back as %v, %v", got.CreatedAt, got.UpdatedAt)
	}
}

func testConversationUpsert(t *testing.T, s history.Store) {
	c := conv("c1", 0)
	c.Streaming = true
	c.PendingInput = []byte(`{"requestId":"r1"}`)
	write(t, s, history.Batch{Conversations: []history.Conversation{c}, Events: events("c1", 1, 2)})

	c.Title = "renamed"
	c.Mode = "act"
	c.UpdatedAt = base.Add(time.Hour)
	c.LastSeq = 3
	c.Streaming = false
	c.PendingInput = nil
	c.Model = "other-model"
	c.Agent = "Copilot CLI" // the agent changed: the latest one is kept
	c.Workspace = history.Workspace{Path: "/srv/repo", Isolation: "none", Dir: "/srv/repo"}
	write(t, s, history.Batch{Conversations: []history.Conversation{c}, Events: events("c1", 3, 3)})
	CheckConversation(t, getConv(t, s, "c1"), c)
	if ids := listIDs(t, s); len(ids) != 1 {
		t.Fatalf("an upsert made a second conversation: %v", ids)
	}
	checkEvents(t, readAll(t, s, "c1", 0), events("c1", 1, 3))

	// A batch of events alone leaves the conversation's metadata as it was.
	write(t, s, history.Batch{Events: events("c1", 4, 5)})
	CheckConversation(t, getConv(t, s, "c1"), c)
}

func testConversationsOrder(t *testing.T, s history.Store) {
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 1*time.Second), conv("b", 3*time.Second), conv("c", 2*time.Second)}})
	if got, want := fmt.Sprint(listIDs(t, s)), "[b c a]"; got != want {
		t.Fatalf("order %s, want %s (most recently updated first)", got, want)
	}
	// Touching a moves it to the front.
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 4*time.Second)}})
	if got, want := fmt.Sprint(listIDs(t, s)), "[a b c]"; got != want {
		t.Fatalf("after an update: order %s, want %s", got, want)
	}
	// One nanosecond apart still orders.
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("d", 4*time.Second+1)}})
	if got, want := fmt.Sprint(listIDs(t, s)), "[d a b c]"; got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
}

func testEventsOrderAndSince(t *testing.T, s history.Store) {
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0), conv("b", 0)}})
	// Interleave two conversations over several batches.
	for from := int64(1); from <= 30; from += 5 {
		write(t, s, history.Batch{Events: append(events("a", from, from+4), events("b", from, from+2)...)})
	}
	all := events("a", 1, 30)
	checkEvents(t, readAll(t, s, "a", 0), all)
	checkEvents(t, readAll(t, s, "a", 1), all[1:])
	checkEvents(t, readAll(t, s, "a", 17), all[17:])
	checkEvents(t, readAll(t, s, "a", 29), all[29:])
	checkEvents(t, readAll(t, s, "a", 30), nil)
	checkEvents(t, readAll(t, s, "a", 1000), nil)
	checkEvents(t, readAll(t, s, "a", -5), all)

	var b []history.Event
	for from := int64(1); from <= 30; from += 5 {
		b = append(b, events("b", from, from+2)...)
	}
	checkEvents(t, readAll(t, s, "b", 0), b)
	checkEvents(t, readAll(t, s, "b", 12), b[8:]) // b's seqs are 1-3, 6-8, 11-13, …: 13 is the ninth
}

func testEventsOutOfOrderWrites(t *testing.T, s history.Store) {
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0)}, Events: []history.Event{event("a", 5), event("a", 2)}})
	write(t, s, history.Batch{Events: []history.Event{event("a", 3), event("a", 1), event("a", 9)}})
	want := []history.Event{event("a", 1), event("a", 2), event("a", 3), event("a", 5), event("a", 9)}
	checkEvents(t, readAll(t, s, "a", 0), want)
	checkEvents(t, readAll(t, s, "a", 2), want[2:])
}

func testEventsStopOnError(t *testing.T, s history.Store) {
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0)}, Events: events("a", 1, 10)})
	stop := errors.New("stop here")
	var got []int64
	err := s.Events(context.Background(), "a", 0, func(e history.Event) error {
		got = append(got, e.Seq)
		if e.Seq == 4 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("Events returned %v, want fn's error", err)
	}
	if fmt.Sprint(got) != "[1 2 3 4]" {
		t.Fatalf("fn saw %v after returning an error at 4", got)
	}
}

// testEventsLongHistory reads more events than any sensible page, from the
// start and from the middle, and with big frames.
func testEventsLongHistory(t *testing.T, s history.Store) {
	const n = 2345
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("long", 0)}})
	all := events("long", 1, n)
	for i := 0; i < n; i += 400 {
		write(t, s, history.Batch{Events: all[i:min(i+400, n)]})
	}
	checkEvents(t, readAll(t, s, "long", 0), all)
	checkEvents(t, readAll(t, s, "long", 1234), all[1234:])

	big := history.Event{ConversationID: "long", Seq: n + 1, Type: "copilot:tool_output", Frame: bytes.Repeat([]byte("0123456789abcdef"), 256<<10/16)}
	big2 := big
	big2.Seq, big2.Frame = n+2, bytes.Repeat([]byte("z"), 3<<20)
	write(t, s, history.Batch{Events: []history.Event{big, big2}})
	checkEvents(t, readAll(t, s, "long", n-1), []history.Event{all[n-1], big, big2})
}

// testEventsWriteFromCallback writes while a replay is running: a store
// must not hold anything across fn that keeps a writer out (the relay
// replays to a slow client while conversations stream).
func testEventsWriteFromCallback(t *testing.T, s history.Store) {
	const n = 1500
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0), conv("b", 0)}, Events: events("a", 1, n)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var next int64 = 1
	err := s.Events(ctx, "a", 0, func(e history.Event) error {
		if e.Seq%100 == 0 {
			if err := s.Write(ctx, history.Batch{Events: []history.Event{event("b", next)}}); err != nil {
				return fmt.Errorf("write from fn at seq %d: %w", e.Seq, err)
			}
			next++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, readAll(t, s, "b", 0), events("b", 1, n/100))
}

func testEventsFramesStayValid(t *testing.T, s history.Store) {
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0)}, Events: events("a", 1, 600)})
	kept := readAll(t, s, "a", 0) // fn may keep what it is given
	write(t, s, history.Batch{Events: events("a", 601, 1200)})
	_ = readAll(t, s, "a", 0)
	checkEvents(t, kept, events("a", 1, 600))
}

// testEventsInStretches reads a history the way the relay replays to a
// slow client: fn stops the read now and then, and the next read starts
// after the last event it took, with writes in between. Every event comes
// once, in order.
func testEventsInStretches(t *testing.T, s history.Store) {
	const n = 1000
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0)}, Events: events("a", 1, n/2)})
	pause := errors.New("pause")
	var got []history.Event
	var since int64
	for calls := 0; ; calls++ {
		if calls > n {
			t.Fatalf("%d reads and still not done: got up to seq %d", calls, since)
		}
		took := 0
		err := s.Events(context.Background(), "a", since, func(e history.Event) error {
			got = append(got, e)
			since = e.Seq
			if took++; took == 37 {
				return pause
			}
			return nil
		})
		if calls == 3 {
			write(t, s, history.Batch{Events: events("a", n/2+1, n)})
		}
		if err == nil {
			break
		}
		if !errors.Is(err, pause) {
			t.Fatalf("Events: %v", err)
		}
	}
	checkEvents(t, got, events("a", 1, n))
}

// testEventsStream checks that a store streams: a read that stops after its
// first event, in a history of 24 MiB, allocates a few pages at most, not
// the history. The relay depends on it: each replay reads in short
// stretches, and a store that loaded everything per read would cost every
// replaying client the whole conversation.
func testEventsStream(t *testing.T, s history.Store) {
	const n, size = 384, 64 << 10
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("big", 0)}})
	frame := bytes.Repeat([]byte("s"), size)
	for from := int64(1); from <= n; from += 32 {
		var b history.Batch
		for seq := from; seq < from+32; seq++ {
			b.Events = append(b.Events, history.Event{ConversationID: "big", Seq: seq, Type: "copilot:delta", Frame: frame})
		}
		write(t, s, b)
	}
	stop := errors.New("enough")
	read := func(since int64) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err := s.Events(context.Background(), "big", since, func(history.Event) error { return stop })
		runtime.ReadMemStats(&after)
		if !errors.Is(err, stop) {
			t.Fatalf("Events: %v", err)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	// What a read allocates is read off the process's counter, which the
	// tests running beside this one (t.Parallel) add to: the least of a
	// few reads is this read's own. A store that loads the history
	// allocates all of it every time.
	least := func(since int64) uint64 {
		alloc := read(since)
		for range 4 {
			alloc = min(alloc, read(since))
		}
		return alloc
	}
	for _, since := range []int64{0, n / 2} {
		if alloc := least(since); alloc > 8<<20 {
			t.Errorf("a read from seq %d that stops after one event allocated %d MiB of a %d MiB history", since, alloc>>20, n*size>>20)
		}
	}
}

// snapshot is everything a store shows, to compare before and after a
// failed write.
func snapshot(t *testing.T, s history.Store, ids ...string) string {
	t.Helper()
	var buf bytes.Buffer
	cs, err := s.Conversations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		fmt.Fprintf(&buf, "conv %s %q %s %d %d %v %s %q %q %+v\n", c.ID, c.Title, c.Mode, c.UpdatedAt.UnixNano(), c.LastSeq, c.Streaming, c.PendingInput, c.Model, c.Agent, c.Workspace)
	}
	for _, id := range ids {
		for _, e := range readAll(t, s, id, 0) {
			fmt.Fprintf(&buf, "event %s %d %s %s\n", e.ConversationID, e.Seq, e.Type, e.Frame)
		}
	}
	return buf.String()
}

func failingWrite(t *testing.T, s history.Store, b history.Batch, ids ...string) {
	t.Helper()
	before := snapshot(t, s, ids...)
	if err := s.Write(context.Background(), b); err == nil {
		t.Fatal("Write of a bad batch succeeded")
	} else {
		t.Logf("Write of a bad batch: %v", err)
	}
	if after := snapshot(t, s, ids...); after != before {
		t.Fatalf("a failed Write changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// The store still works.
	if _, err := s.Conversations(context.Background()); err != nil {
		t.Fatalf("Conversations after a failed Write: %v", err)
	}
}

func testBatchAtomicDuplicateStored(t *testing.T, s history.Store) {
	a := conv("a", 0)
	a.LastSeq = 3
	write(t, s, history.Batch{Conversations: []history.Conversation{a}, Events: events("a", 1, 3)})
	a2 := a
	a2.LastSeq, a2.Title, a2.UpdatedAt = 6, "changed", base.Add(time.Hour)
	bad := history.Batch{
		Conversations: []history.Conversation{a2, conv("new", 0)},
		Events:        append(append(events("new", 1, 2), events("a", 4, 5)...), event("a", 3)),
	}
	before := snapshot(t, s, "a", "new")
	err := s.Write(context.Background(), bad)
	var partial *history.PartialWriteError
	switch {
	case err == nil:
		t.Fatal("Write of a batch repeating a stored seq succeeded")
	case errors.As(err, &partial):
		// A store several writers share: the stored seq may be another
		// writer's, so it is a's conflict alone, and new is written.
		if len(partial.Failed) != 1 || !errors.Is(partial.Failed["a"], history.ErrConflict) {
			t.Fatalf("Write = %v; want a's conflict alone (history.ErrConflict), or the whole batch refused", err)
		}
		checkEvents(t, readAll(t, s, "a", 0), events("a", 1, 3))
		CheckConversation(t, getConv(t, s, "a"), a)
		checkEvents(t, readAll(t, s, "new", 0), events("new", 1, 2))
		write(t, s, history.Batch{Conversations: []history.Conversation{a2}, Events: events("a", 4, 6)})
	default:
		t.Logf("Write of a bad batch: %v", err)
		if after := snapshot(t, s, "a", "new"); after != before {
			t.Fatalf("a failed Write changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		wantNotFound(t, s, "new")
		// The same batch without the repeat goes through.
		write(t, s, history.Batch{Conversations: []history.Conversation{a2, conv("new", 0)}, Events: append(events("new", 1, 2), events("a", 4, 6)...)})
	}
	checkEvents(t, readAll(t, s, "a", 0), events("a", 1, 6))
	CheckConversation(t, getConv(t, s, "a"), a2)
}

func testBatchAtomicDuplicateInBatch(t *testing.T, s history.Store) {
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0)}, Events: events("a", 1, 2)})
	failingWrite(t, s, history.Batch{
		Conversations: []history.Conversation{conv("b", time.Hour)},
		Events:        []history.Event{event("b", 1), event("a", 3), event("a", 4), event("a", 3)},
	}, "a", "b")
	wantNotFound(t, s, "b")
}

func testBatchAtomicUnknownConversation(t *testing.T, s history.Store) {
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0)}, Events: events("a", 1, 2)})
	failingWrite(t, s, history.Batch{
		Conversations: []history.Conversation{conv("b", time.Hour)},
		Events:        []history.Event{event("a", 3), event("b", 1), event("ghost", 1)},
	}, "a", "b", "ghost")
	wantNotFound(t, s, "ghost")
	wantNotFound(t, s, "b")
}

func testEmptyBatch(t *testing.T, s history.Store) {
	write(t, s, history.Batch{})
	if ids := listIDs(t, s); len(ids) != 0 {
		t.Fatalf("an empty batch made conversations %v", ids)
	}
}

func testDelete(t *testing.T, s history.Store) {
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0), conv("b", time.Second)}, Events: append(events("a", 1, 700), events("b", 1, 5)...)})
	if err := s.Delete(context.Background(), "a"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantNotFound(t, s, "a")
	checkEvents(t, readAll(t, s, "a", 0), nil)
	if got := fmt.Sprint(listIDs(t, s)); got != "[b]" {
		t.Fatalf("after Delete(a): %s", got)
	}
	checkEvents(t, readAll(t, s, "b", 0), events("b", 1, 5))
	if err := s.Delete(context.Background(), "a"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
}

func testDeleteThenRecreate(t *testing.T, s history.Store) {
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0)}, Events: events("a", 1, 5)})
	if err := s.Delete(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	// A new conversation with the same id starts again at seq 1.
	fresh := conv("a", time.Hour)
	fresh.Title = "second life"
	fresh.LastSeq = 2
	write(t, s, history.Batch{Conversations: []history.Conversation{fresh}, Events: events("a", 1, 2)})
	checkEvents(t, readAll(t, s, "a", 0), events("a", 1, 2))
	CheckConversation(t, getConv(t, s, "a"), fresh)
}

func testDeleteOlderThan(t *testing.T, s history.Store) {
	d, ok := s.(OlderThanDeleter)
	if !ok {
		t.Skipf("%T has no DeleteOlderThan", s)
	}
	write(t, s, history.Batch{
		Conversations: []history.Conversation{conv("old1", -48*time.Hour), conv("old2", -25*time.Hour), conv("edge", -24*time.Hour), conv("new", 0)},
		Events:        append(append(events("old1", 1, 600), events("old2", 1, 3)...), append(events("edge", 1, 2), events("new", 1, 4)...)...),
	})
	n, err := d.DeleteOlderThan(context.Background(), base.Add(-24*time.Hour))
	if err != nil {
		t.Fatalf("DeleteOlderThan: %v", err)
	}
	if n != 2 {
		t.Fatalf("DeleteOlderThan removed %d conversations, want 2", n)
	}
	if got := fmt.Sprint(listIDs(t, s)); got != "[new edge]" {
		t.Fatalf("left %s, want [new edge] (updated at the cutoff is kept)", got)
	}
	checkEvents(t, readAll(t, s, "old1", 0), nil)
	checkEvents(t, readAll(t, s, "old2", 0), nil)
	checkEvents(t, readAll(t, s, "edge", 0), events("edge", 1, 2))
	checkEvents(t, readAll(t, s, "new", 0), events("new", 1, 4))
	if n, err := d.DeleteOlderThan(context.Background(), base.Add(-24*time.Hour)); err != nil || n != 0 {
		t.Fatalf("second DeleteOlderThan = %d, %v; want 0, nil", n, err)
	}
}

// testConcurrent streams several conversations at once while others replay
// and list, as the relay does; run it with -race.
func testConcurrent(t *testing.T, s history.Store) {
	const writers, batches, perBatch = 4, 40, 5
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers+1)
	stopReaders := make(chan struct{})
	var readers sync.WaitGroup
	for w := range writers {
		id := fmt.Sprintf("w%d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := conv(id, 0)
			for i := range batches {
				from := int64(i*perBatch + 1)
				c.LastSeq = from + perBatch - 1
				c.UpdatedAt = base.Add(time.Duration(i) * time.Second)
				if err := s.Write(ctx, history.Batch{Conversations: []history.Conversation{c}, Events: events(id, from, c.LastSeq)}); err != nil {
					errs <- fmt.Errorf("writer %s: %w", id, err)
					return
				}
			}
		}()
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stopReaders:
					return
				default:
				}
				var last int64
				err := s.Events(ctx, id, 0, func(e history.Event) error {
					if e.Seq != last+1 {
						return fmt.Errorf("reader %s: seq %d after %d", id, e.Seq, last)
					}
					last = e.Seq
					return nil
				})
				if err == nil {
					// The conversation row is written in the same batch as
					// its events, so it never lags behind what was read.
					var c history.Conversation
					c, err = s.Conversation(ctx, id)
					if errors.Is(err, history.ErrNotFound) && last == 0 {
						err = nil
					} else if err == nil && c.LastSeq < last {
						err = fmt.Errorf("reader %s: conversation says last seq %d after reading %d", id, c.LastSeq, last)
					}
				}
				if err == nil {
					_, err = s.Conversations(ctx)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stopReaders)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w := range writers {
		id := fmt.Sprintf("w%d", w)
		checkEvents(t, readAll(t, s, id, 0), events(id, 1, batches*perBatch))
		if c := getConv(t, s, id); c.LastSeq != batches*perBatch {
			t.Errorf("%s: LastSeq %d, want %d", id, c.LastSeq, batches*perBatch)
		}
	}
}
