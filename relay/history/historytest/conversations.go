package historytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// The suite's checks of conversations: the epoch, an empty store, a
// conversation's record, its upsert and the list's order.

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
