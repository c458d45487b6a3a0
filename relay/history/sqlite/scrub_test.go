package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// filesHolding lists the files of dir whose bytes contain text.
func filesHolding(t *testing.T, dir, text string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(text)) {
			out = append(out, e.Name())
		}
	}
	return out
}

// writeMarked stores a conversation whose title and events hold marker, in
// the database file (checkpointed by a close and reopen) and in the log.
func writeMarked(t *testing.T, dir, conv, marker string, updated int) *Store {
	t.Helper()
	s := openStore(t, dir, Options{})
	frame := func(seq int64) history.Event {
		return history.Event{ConversationID: conv, Seq: seq, Type: "copilot:user_message",
			Frame: fmt.Appendf(nil, `{"type":"copilot:user_message","data":{"conversationId":%q,"seq":%d,"content":"%s"}}`, conv, seq, marker)}
	}
	meta := history.Conversation{ID: conv, Title: marker, Mode: "act", CreatedAt: t0, UpdatedAt: t0.AddDate(0, 0, updated), LastSeq: 1}
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{meta}, Events: []history.Event{frame(1)}})
	mustClose(t, s)
	s = openStore(t, dir, Options{})
	meta.LastSeq = 2
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{meta}, Events: []history.Event{frame(2)}})
	if got := filesHolding(t, dir, marker); len(got) < 2 {
		t.Fatalf("the marker is in %v, want the database and its log", got)
	}
	return s
}

// Delete and DeleteOlderThan leave the deleted text in no file of the data
// dir, the write-ahead log included, without a close.
func TestDeleteLeavesNoText(t *testing.T) {
	t.Run("Delete", func(t *testing.T) {
		dir := t.TempDir()
		s := writeMarked(t, dir, "gone", "marker-7d1e0c", 0)
		defer mustClose(t, s)
		writeSome(t, s, "kept", 2)
		if err := s.Delete(context.Background(), "gone"); err != nil {
			t.Fatal(err)
		}
		if got := filesHolding(t, dir, "marker-7d1e0c"); len(got) > 0 {
			t.Fatalf("after Delete the marker is in %v", got)
		}
		if got := allEvents(t, s, "kept"); len(got) != 2 {
			t.Fatalf("the other conversation has %d events", len(got))
		}
	})
	t.Run("DeleteOlderThan", func(t *testing.T) {
		dir := t.TempDir()
		s := writeMarked(t, dir, "old", "marker-5b9a44", -30)
		defer mustClose(t, s)
		if n, err := s.DeleteOlderThan(context.Background(), t0); err != nil || n != 1 {
			t.Fatalf("DeleteOlderThan: %d, %v", n, err)
		}
		if got := filesHolding(t, dir, "marker-5b9a44"); len(got) > 0 {
			t.Fatalf("after DeleteOlderThan the marker is in %v", got)
		}
	})
}
