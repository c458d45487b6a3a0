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

// What the suite's checks build and read a store with: conversations and
// events at fixed times, writes and reads that fail the test on an error.

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
