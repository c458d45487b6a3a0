package historytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// The suite's checks that a batch is written whole or not at all.

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
