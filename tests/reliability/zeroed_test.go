package reliability

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// zeroLeavesWith overwrites with zeros, behind the running relay's back,
// every B-tree leaf page of the SQLite database at path that holds text and
// none of keep, as a failing disk or a stray write would: the pages of one
// conversation's rows. It returns how many pages it zeroed.
func zeroLeavesWith(t *testing.T, path, text string, keep ...string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 100 {
		t.Fatalf("%s is %d bytes: no database", path, len(b))
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
		if page[0] != 0x0a || !bytes.Contains(page, []byte(text)) { // 0x0a: a leaf of an index B-tree (WITHOUT ROWID)
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
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDeleteZeroedConversation zeroes, while the relay runs, the pages of
// the database that hold a conversation's events, and deletes it from a
// connection that is not subscribed, while another one is: the delete is
// done and answered (copilot:deleted to the subscriber) well within 10 s,
// the conversation is gone (the list, a subscribe from seq 0), the others
// keep every event, and the relay starts again on the data dir. Before,
// the delete failed on the unreadable pages and the connection that asked
// got nothing.
func TestDeleteZeroedConversation(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	const token = "zeroed-test-token-4c2e"
	// Each conversation's turn is 7,000 deltas of its prompt, 500
	// characters: rows that fill leaf pages of their own, 4 MB a
	// conversation, more than the relay's page cache holds (2 MB): the
	// pages the quick_check at its start leaves in memory cannot hide all
	// of the damage.
	var steps []map[string]any
	for range 7000 {
		steps = append(steps, map[string]any{"delta": "{{prompt}}"})
	}
	script := map[string]any{"turns": []any{map[string]any{"steps": steps}}}
	args := []string{"--agent", "script", "--script", writeScript(t, script),
		"--data-dir", dataDir, "--listen", "127.0.0.1:0", "--token", token}
	p := startRelay(t, nil, args...)
	w := newWatcher(t, "w", p.URL, token)
	// Kept conversations sort before and after the zeroed one.
	before, conv, after := "a-"+uuid.NewString(), "m-"+uuid.NewString(), "z-"+uuid.NewString()
	marker := func(id string) string { return "text-of-" + id }
	for _, id := range []string{before, after, conv} {
		w.subscribe(id, -1)
		w.cl.Send("copilot:send", map[string]any{"conversationId": id, "prompt": strings.Repeat(marker(id)+" ", 500/(len(marker(id))+1))})
		w.until("the turn's end", isType("copilot:idle", id))
	}
	p.stop()
	w.drain()

	p = startRelay(t, nil, args...)
	n := zeroLeavesWith(t, filepath.Join(dataDir, "history.db"), marker(conv), before, after)
	if n < 10 {
		t.Fatalf("only %d pages hold the conversation's rows alone", n)
	}
	t.Logf("zeroed %d pages", n)
	sub := newWatcher(t, "sub", p.URL, token)
	sub.subscribe(conv, -1)
	owner := relaytest.Dial(t, p.URL, token)
	owner.Send("copilot:delete", map[string]any{"conversationId": conv})
	start := time.Now()
	f := sub.untilWithin("copilot:deleted", 10*time.Second, func(f relaytest.Frame) bool {
		return f.Type == "copilot:deleted" || f.Type == "copilot:error"
	})
	if f.Type != "copilot:deleted" {
		t.Fatalf("the delete of the zeroed conversation: %s", f.Raw)
	}
	t.Logf("copilot:deleted after %v", time.Since(start).Round(time.Millisecond))
	expectPong(t, owner, "the delete") // no error for the owner

	check := func(p *relayProc) {
		t.Helper()
		r := newWatcher(t, "r", p.URL, token)
		r.cl.Send("copilot:list", nil)
		l := r.until("copilot:conversations", func(f relaytest.Frame) bool { return f.Type == "copilot:conversations" })
		if strings.Contains(string(l.Raw), conv) || !strings.Contains(string(l.Raw), before) || !strings.Contains(string(l.Raw), after) {
			t.Fatalf("the list: %s", l.Raw)
		}
		if s := r.subscribe(conv, 0); s["seq"] != 0.0 {
			t.Fatalf("the deleted conversation: %v", s)
		}
		for _, id := range []string{before, after} {
			r.subscribe(id, 0)
			if got, want := r.count(id), w.count(id); got != want {
				t.Fatalf("%s replays %d events, want %d", id, got, want)
			}
		}
	}
	check(p)
	p.stop()
	p = startRelay(t, nil, args...) // its quick_check finds the database whole
	check(p)
}
