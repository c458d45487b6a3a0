package sqlite

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// zeroPages overwrites with zeros, behind the open store's back, every leaf
// and overflow page of the database file that holds text and none of keep:
// the pages of one conversation's rows, zeroed as a failing disk or a stray
// write would. Interior B-tree pages are spared: they hold the keys that
// lead to every conversation's rows (a WITHOUT ROWID table's interior cells
// are whole rows, so one may hold text), and without them no conversation
// could be read. It returns how many pages it zeroed.
func zeroPages(t *testing.T, path, text string, keep ...string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(binary.BigEndian.Uint16(b[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
pages:
	for off := pageSize; off+pageSize <= len(b); off += pageSize { // page 1 is the schema
		page := b[off : off+pageSize]
		if page[0] == 0x02 || page[0] == 0x05 || !bytes.Contains(page, []byte(text)) { // 2, 5: interior pages
			continue
		}
		for _, k := range keep {
			if bytes.Contains(page, []byte(k)) {
				continue pages
			}
		}
		if _, err := f.WriteAt(make([]byte, pageSize), int64(off)); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// bigEvents are n events of conv whose frames, about 20 KB each, hold
// marker: each spans several overflow pages.
func bigEvents(conv, marker string, n int64) []history.Event {
	var out []history.Event
	for seq := int64(1); seq <= n; seq++ {
		out = append(out, history.Event{ConversationID: conv, Seq: seq, Type: "copilot:delta",
			Frame: fmt.Appendf(nil, `{"type":"copilot:delta","data":{"conversationId":%q,"seq":%d,"content":%q}}`, conv, seq, strings.Repeat(marker+" ", 20_000/(len(marker)+1)))})
	}
	return out
}

// A conversation whose pages were zeroed while the relay ran can still be
// deleted: its rows go without their pages being read, the other
// conversations keep every event, no file holds its text, and the database
// opens again (quick_check finds nothing).
func TestDeleteZeroedConversation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	const marker = "zeroed-marker-3f9b"
	// The ids sort around the damaged one, so that the kept rows sit on
	// both sides of it in the events table.
	kept := map[string][]history.Event{
		"a-kept": append(testEvents("a-kept", 1, 300), bigEvents("a-kept", "kept-text-a", 3)...),
		"z-kept": append(testEvents("z-kept", 1, 300), bigEvents("z-kept", "kept-text-z", 3)...),
	}
	for id, evs := range kept {
		for i := range evs {
			evs[i].Seq = int64(i + 1)
		}
		mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: id, Title: id, LastSeq: int64(len(evs))}}, Events: evs})
	}
	// Frames of 600 bytes: they fit a page's cell (a larger one's overflow
	// pages are read whenever a search compares with it, and a WITHOUT
	// ROWID table's interior pages hold such rows, so zeroed overflow
	// pages could hide every conversation; nothing can then be kept).
	var gone []history.Event
	for seq := int64(1); seq <= 600; seq++ {
		gone = append(gone, history.Event{ConversationID: "m-gone", Seq: seq, Type: "copilot:delta",
			Frame: fmt.Appendf(nil, `{"type":"copilot:delta","data":{"conversationId":"m-gone","seq":%d,"content":%q}}`, seq, strings.Repeat(marker+" ", 28))})
	}
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "m-gone", Title: "gone", LastSeq: 600}}, Events: gone})
	mustClose(t, s)

	// SkipCheck: Open's quick_check would leave the pages in the writer's
	// cache, which would hide the damage from it.
	s = openStore(t, dir, Options{SkipCheck: true})
	defer mustClose(t, s)
	path := filepath.Join(dir, FileName)
	if n := zeroPages(t, path, marker, "a-kept", "z-kept"); n < 50 {
		t.Fatalf("only %d pages hold the conversation's text", n)
	} else {
		t.Logf("zeroed %d pages", n)
	}
	if err := s.Events(context.Background(), "m-gone", 0, func(history.Event) error { return nil }); err == nil {
		t.Fatal("the zeroed conversation still reads: the test shows nothing")
	}

	if err := s.Delete(context.Background(), "m-gone"); err != nil {
		t.Fatalf("Delete of the zeroed conversation: %v", err)
	}
	if _, err := s.Conversation(context.Background(), "m-gone"); err != history.ErrNotFound {
		t.Fatalf("the deleted conversation: %v, want ErrNotFound", err)
	}
	if got := allEvents(t, s, "m-gone"); len(got) != 0 {
		t.Fatalf("the deleted conversation has %d events", len(got))
	}
	check := func(s *Store) {
		t.Helper()
		convs, err := s.Conversations(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(convs) != 2 {
			t.Fatalf("conversations after the delete: %v", convs)
		}
		for id, want := range kept {
			sameEvents(t, allEvents(t, s, id), want)
		}
	}
	check(s)
	// New events of the same id are stored as for a new conversation.
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "m-gone", Title: "again", LastSeq: 1}}, Events: testEvents("m-gone", 1, 1)})
	if err := s.Delete(context.Background(), "m-gone"); err != nil {
		t.Fatal(err)
	}
	if got := filesHolding(t, dir, marker); len(got) > 0 {
		t.Fatalf("after the delete the conversation's text is in %v", got)
	}
	mustClose(t, s)
	s = openStore(t, dir, Options{}) // quick_check: the database is whole
	check(s)
}

// When another conversation's pages are zeroed too, deleting one of them
// would lose the other's events: the delete fails, says which, and changes
// nothing.
func TestDeleteZeroedRefusesToLoseOthers(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "a-other", LastSeq: 10}}, Events: bigEvents("a-other", "other-text-1c", 10)})
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "m-gone", LastSeq: 10}}, Events: bigEvents("m-gone", "gone-text-5e", 10)})
	mustClose(t, s)
	// SkipCheck: Open's quick_check would leave the pages in the writer's
	// cache, which would hide the damage from it.
	s = openStore(t, dir, Options{SkipCheck: true})
	defer mustClose(t, s)
	path := filepath.Join(dir, FileName)
	if n, m := zeroPages(t, path, "gone-text-5e", "other-text-1c"), zeroPages(t, path, "other-text-1c", "gone-text-5e"); n < 10 || m < 10 {
		t.Fatalf("zeroed %d and %d pages", n, m)
	}
	if err := s.Events(context.Background(), "a-other", 0, func(history.Event) error { return nil }); err == nil {
		t.Fatal("the other conversation still reads: the test shows nothing")
	}

	err := s.Delete(context.Background(), "m-gone")
	if err == nil || !strings.Contains(err.Error(), `"a-other" cannot be read either`) {
		t.Fatalf("Delete: %v, want an error naming the other damaged conversation", err)
	}
	t.Logf("Delete: %v", err)
	if _, err := s.Conversation(context.Background(), "m-gone"); err != nil {
		t.Fatalf("the conversation after the failed delete: %v", err)
	}
	if _, err := s.Conversation(context.Background(), "a-other"); err != nil {
		t.Fatalf("the other conversation after the failed delete: %v", err)
	}
}
