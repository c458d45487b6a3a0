package historytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// The suite's checks of deleting: one conversation, and by age.

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
