package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/historytest"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)

func testEvent(conv string, seq int64) history.Event {
	return history.Event{ConversationID: conv, Seq: seq, Type: "copilot:delta",
		Frame: fmt.Appendf(nil, `{"type":"copilot:delta","data":{"conversationId":%q,"seq":%d,"messageId":"m1","content":"some text of a delta, about this long"}}`, conv, seq)}
}

func testEvents(conv string, from, to int64) []history.Event {
	var out []history.Event
	for s := from; s <= to; s++ {
		out = append(out, testEvent(conv, s))
	}
	return out
}

func mustWrite(t *testing.T, s history.Store, b history.Batch) {
	t.Helper()
	if err := s.Write(context.Background(), b); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func mustClose(t *testing.T, s history.Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func allEvents(t *testing.T, s history.Store, conv string) []history.Event {
	t.Helper()
	var out []history.Event
	if err := s.Events(context.Background(), conv, 0, func(e history.Event) error { out = append(out, e); return nil }); err != nil {
		t.Fatalf("Events(%q): %v", conv, err)
	}
	return out
}

func sameEvents(t *testing.T, got, want []history.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].ConversationID != want[i].ConversationID || got[i].Seq != want[i].Seq || got[i].Type != want[i].Type || string(got[i].Frame) != string(want[i].Frame) {
			t.Fatalf("event %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	epoch := s.Epoch()
	a := history.Conversation{ID: "a", Title: "Refactor the parser", Mode: "act", CreatedAt: t0, UpdatedAt: t0.Add(time.Minute),
		LastSeq: 120, Streaming: true, PendingInput: []byte(`{"conversationId":"a","seq":120,"requestId":"q1","question":"Overwrite?"}`), Model: "gpt-5"}
	b := history.Conversation{ID: "b", Title: "Plan the release", Mode: "plan", CreatedAt: t0, UpdatedAt: t0.Add(2 * time.Minute), LastSeq: 3, Model: "claude-sonnet-4.5"}
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{a, b}, Events: append(testEvents("a", 1, 60), testEvents("b", 1, 3)...)})
	mustWrite(t, s, history.Batch{Events: testEvents("a", 61, 120)})
	mustClose(t, s)

	s = openStore(t, dir, Options{})
	if s.Epoch() != epoch {
		t.Fatalf("epoch changed across reopen: %q -> %q", epoch, s.Epoch())
	}
	cs, err := s.Conversations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 {
		t.Fatalf("%d conversations after reopen, want 2", len(cs))
	}
	historytest.CheckConversation(t, cs[0], b)
	historytest.CheckConversation(t, cs[1], a)
	sameEvents(t, allEvents(t, s, "a"), testEvents("a", 1, 120))
	sameEvents(t, allEvents(t, s, "b"), testEvents("b", 1, 3))

	// The relay goes on from the stored last seq and closes the turn.
	a.LastSeq, a.Streaming, a.PendingInput, a.UpdatedAt = 122, false, nil, t0.Add(time.Hour)
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{a}, Events: testEvents("a", 121, 122)})
	mustClose(t, s)

	s = openStore(t, dir, Options{})
	defer mustClose(t, s)
	got, err := s.Conversation(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	historytest.CheckConversation(t, got, a)
	sameEvents(t, allEvents(t, s, "a"), testEvents("a", 1, 122))
	if s.Epoch() != epoch {
		t.Fatalf("epoch changed across the second reopen")
	}
}

func TestNewDirNewEpoch(t *testing.T) {
	a := openStore(t, t.TempDir(), Options{})
	defer mustClose(t, a)
	b := openStore(t, t.TempDir(), Options{})
	defer mustClose(t, b)
	if a.Epoch() == b.Epoch() || len(a.Epoch()) < 16 {
		t.Fatalf("epochs %q and %q", a.Epoch(), b.Epoch())
	}
}

func TestCreatesPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "data")
	s := openStore(t, dir, Options{})
	defer mustClose(t, s)
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "a"}}, Events: testEvents("a", 1, 2)})
	checkPerm(t, dir, 0o700)
	checkPerm(t, filepath.Join(dir, FileName), 0o600)
	checkPerm(t, filepath.Join(dir, FileName+"-wal"), 0o600)
	checkPerm(t, filepath.Join(dir, FileName+"-shm"), 0o600)
	if s.Path() != filepath.Join(dir, FileName) {
		t.Fatalf("Path() = %s", s.Path())
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*.new*"))
	probes, _ := filepath.Glob(filepath.Join(dir, ".write-probe-*"))
	if len(leftovers)+len(probes) > 0 {
		t.Fatalf("left behind %v %v", leftovers, probes)
	}
}

func checkPerm(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s has mode %v, want %v", filepath.Base(path), got, want)
	}
}

func TestTightensLoosePermissions(t *testing.T) {
	dir := t.TempDir()
	mustClose(t, openStore(t, dir, Options{}))
	path := filepath.Join(dir, FileName)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, Options{})
	defer mustClose(t, s)
	checkPerm(t, path, 0o600)
}

func TestSecondOpenIsInUse(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	_, err := Open(context.Background(), dir, quiet())
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("second Open: %v, want ErrInUse", err)
	}
	if !strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("the message should name the file and the process: %v", err)
	}
	mustClose(t, s)
	mustClose(t, openStore(t, dir, Options{})) // free again after Close
}

func TestCloseTwice(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	mustClose(t, s)
	mustClose(t, s)
	if err := s.Write(context.Background(), history.Batch{Conversations: []history.Conversation{{ID: "a"}}}); err == nil {
		t.Fatal("Write after Close succeeded")
	}
}

// A creation that died midway leaves history.db.new, never history.db: the
// next Open starts over.
func TestInterruptedCreationIsRedone(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName+".new"), []byte("half a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, Options{})
	defer mustClose(t, s)
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "a"}}, Events: testEvents("a", 1, 1)})
	if _, err := os.Stat(filepath.Join(dir, FileName+".new")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the leftover is still there: %v", err)
	}
}

func TestBadOptions(t *testing.T) {
	if _, err := Open(context.Background(), t.TempDir(), Options{Synchronous: "sometimes"}); err == nil {
		t.Fatal("Open accepted synchronous=sometimes")
	}
	s := openStore(t, t.TempDir(), Options{Synchronous: "normal"})
	mustClose(t, s)
}

func TestTimeOutOfRange(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	defer mustClose(t, s)
	err := s.Write(context.Background(), history.Batch{Conversations: []history.Conversation{{ID: "a", UpdatedAt: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}}})
	if err == nil || !strings.Contains(err.Error(), "2262") {
		t.Fatalf("Write of the year 3000: %v", err)
	}
}

func TestCancelledWriteWritesNothing(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	defer mustClose(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Write(ctx, history.Batch{Conversations: []history.Conversation{{ID: "a"}}, Events: testEvents("a", 1, 3)}); err == nil {
		t.Fatal("Write with a cancelled context succeeded")
	}
	if _, err := s.Conversation(context.Background(), "a"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("after a cancelled Write: %v", err)
	}
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "a"}}, Events: testEvents("a", 1, 3)})
}

// Events go in by many rows per statement; a refused event in the middle of
// a big batch is still named exactly, and nothing of the batch stays.
func TestBadEventInBigBatchIsNamed(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	defer mustClose(t, s)
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "a"}}, Events: testEvents("a", 1, 10)})

	batch := testEvents("a", 11, 200)
	batch[150] = testEvent("a", 7) // already stored
	err := s.Write(context.Background(), history.Batch{Conversations: []history.Conversation{{ID: "a", Title: "changed"}}, Events: batch})
	if err == nil || !strings.Contains(err.Error(), `event 7 of conversation "a"`) || !strings.Contains(err.Error(), "already stored") {
		t.Fatalf("Write: %v", err)
	}
	batch = testEvents("a", 11, 200)
	batch[77] = testEvent("nobody", 1)
	err = s.Write(context.Background(), history.Batch{Events: batch})
	if !errors.Is(err, history.ErrNotFound) || !strings.Contains(err.Error(), `conversation "nobody"`) {
		t.Fatalf("Write: %v", err)
	}
	sameEvents(t, allEvents(t, s, "a"), testEvents("a", 1, 10))
	if c, _ := s.Conversation(context.Background(), "a"); c.Title != "" {
		t.Fatalf("the failed batch changed the conversation: %+v", c)
	}
	mustWrite(t, s, history.Batch{Events: testEvents("a", 11, 200)})
	sameEvents(t, allEvents(t, s, "a"), testEvents("a", 1, 200))
}

// copilot:delete removes a conversation from disk: its bytes do not stay
// behind in free pages of the database file.
func TestDeleteLeavesNoTrace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	secret := func(seq int64) history.Event {
		return history.Event{ConversationID: "secret", Seq: seq, Type: "copilot:delta", Frame: fmt.Appendf(nil, `{"content":"TOP-SECRET-PAYLOAD-%05d"}`, seq)}
	}
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "secret", Title: "TOP-SECRET-TITLE"}, {ID: "kept"}}, Events: testEvents("kept", 1, 300)})
	for from := int64(1); from <= 2000; from += 100 {
		var evs []history.Event
		for seq := from; seq < from+100; seq++ {
			evs = append(evs, secret(seq))
		}
		mustWrite(t, s, history.Batch{Events: evs})
	}
	if err := s.Delete(context.Background(), "secret"); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s) // checkpoints the log into the file and removes it
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, trace := range []string{"TOP-SECRET-PAYLOAD", "TOP-SECRET-TITLE"} {
		if strings.Contains(string(data), trace) {
			t.Errorf("%q is still in the database file after Delete", trace)
		}
	}
	if !strings.Contains(string(data), `"messageId":"m1"`) {
		t.Fatal("the kept conversation is not in the file either: the test looks in the wrong place")
	}
}

// Close leaves no goroutine of the store behind (database/sql starts one per
// pool; the modernc driver one per query with a cancellable context).
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	s := openStore(t, t.TempDir(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "a"}}, Events: testEvents("a", 1, 1200)})
	if err := s.Events(ctx, "a", 0, func(history.Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conversations(ctx); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before Open, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
