package relay_test

import (
	"encoding/base64"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
)

// makeConversations makes n conversations with one event each
// (copilot:set_mode), the last one made most recently updated.
func makeConversations(t *testing.T, cl *relaytest.Client, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%04d", prefix, i)
		cl.Send("copilot:set_mode", map[string]any{"conversationId": ids[i], "mode": "plan"})
	}
	// A conversation is listed once its event is stored and sent, which
	// a pong does not wait for (it goes out at once): wait for the last
	// one's event, which the committer sends after every one before it.
	// Replayed or live, it comes once subscribed from seq 0.
	last := ids[n-1]
	cl.Send("copilot:subscribe", map[string]any{"conversationId": last, "sinceSeq": 0})
	cl.WaitFor("copilot:mode_changed", func(f relaytest.Frame) bool { return f.Field("conversationId") == last })
	cl.Send("copilot:unsubscribe", map[string]any{"conversationId": last})
	sync_(t, cl)
	return ids
}

// listPage asks for a page and returns it.
func listPage(t *testing.T, cl *relaytest.Client, data map[string]any) protocol.Conversations {
	t.Helper()
	cl.Send("copilot:list", data)
	f := cl.WaitFor("copilot:conversations", nil)
	if len(f.Raw) > protocol.MaxFrameBytes {
		t.Fatalf("a page of %d bytes", len(f.Raw))
	}
	var page protocol.Conversations
	f.Decode(t, &page)
	return page
}

// Every list is paged: at most 200 entries a page (or the limit asked for),
// most recently updated first, nextCursor while more remain; following the
// cursors lists every conversation once, also while some are updated
// meanwhile. A bad cursor gets invalid_field.
func TestListPaging(t *testing.T) {
	// One connection makes all 450: above the default rate of new
	// conversations (TestNewConversationLimit).
	e := start(t, func(c *relay.Config) { c.MaxNewConversations = 1000 })
	cl := e.dial()
	ids := makeConversations(t, cl, "c", 450)

	var got []protocol.ConversationInfo
	var sizes []int
	cursor := ""
	for {
		data := map[string]any{}
		if cursor != "" {
			data["cursor"] = cursor
		}
		page := listPage(t, cl, data)
		got = append(got, page.Conversations...)
		sizes = append(sizes, len(page.Conversations))
		if page.NextCursor == "" {
			break
		}
		if len(sizes) == 2 {
			// Updated while the list is paged: it moves to the top, where
			// the pages already read are, and is not listed again.
			cl.Send("copilot:set_mode", map[string]any{"conversationId": ids[10], "mode": "act"})
			sync_(t, cl)
		}
		cursor = page.NextCursor
	}
	if !slices.Equal(sizes, []int{200, 200, 49}) {
		t.Errorf("page sizes %v, want 200, 200 and the 49 left (one moved up)", sizes)
	}
	seen := map[string]int{}
	for i, c := range got {
		seen[c.ConversationID]++
		if i > 0 && c.UpdatedAt > got[i-1].UpdatedAt {
			t.Fatalf("entry %d (%s, %s) is newer than the one before (%s)", i, c.ConversationID, c.UpdatedAt, got[i-1].UpdatedAt)
		}
		if c.CreatedAt == "" || c.Mode != protocol.ModePlan {
			t.Fatalf("entry %+v", c)
		}
	}
	for i, id := range ids {
		if want := 1; seen[id] != want && !(i == 10 && seen[id] == 0) {
			t.Errorf("%s listed %d times", id, seen[id])
		}
	}
	// The updated one heads a new first page.
	if first := listPage(t, cl, map[string]any{"limit": 1}); len(first.Conversations) != 1 || first.Conversations[0].ConversationID != ids[10] || first.NextCursor == "" {
		t.Errorf("first page of 1: %+v", first)
	}
	// A limit over 200 is cut to 200; one under gives that many.
	if page := listPage(t, cl, map[string]any{"limit": 5000}); len(page.Conversations) != protocol.MaxListLimit {
		t.Errorf("limit 5000: %d entries", len(page.Conversations))
	}
	if page := listPage(t, cl, map[string]any{"limit": 7}); len(page.Conversations) != 7 {
		t.Errorf("limit 7: %d entries", len(page.Conversations))
	}
	// Bad cursors.
	for _, bad := range []string{"not base64!", base64.RawURLEncoding.EncodeToString([]byte("v2:1:x")), base64.RawURLEncoding.EncodeToString([]byte("v1:x:y")), base64.RawURLEncoding.EncodeToString([]byte("v1:5:"))} {
		cl.Send("copilot:list", map[string]any{"cursor": bad})
		f := cl.Expect("error")
		if m := dataMap(t, f); m["code"] != protocol.CodeInvalidField || m["type"] != protocol.TypeList {
			t.Errorf("cursor %q: %s", bad, f.Raw)
		}
	}
}

// expectNotice waits for the next copilot:conversation about id.
func expectNotice(t *testing.T, cl *relaytest.Client, id string) protocol.ConversationChanged {
	t.Helper()
	f := cl.WaitFor("copilot:conversation", func(f relaytest.Frame) bool { return f.Field("conversationId") == id })
	if f.Seq() != -1 {
		t.Errorf("a notice carries a seq: %s", f.Raw)
	}
	var d protocol.ConversationChanged
	f.Decode(t, &d)
	return d
}

// watch: true makes the connection hear of every change the list shows,
// soon and coalesced: created (with its title), streaming and not, a
// question open and closed, a mode change, deleted. A long stream is not a
// flood. watch: false, or another connection, hears nothing.
func TestListWatch(t *testing.T) {
	e := start(t, nil)
	watcher := e.dial()
	if page := listPage(t, watcher, map[string]any{"watch": true}); len(page.Conversations) != 0 {
		t.Fatalf("first page %+v", page)
	}
	other := e.dial()
	listPage(t, other, nil)

	cl := e.dial()
	cl.Send("copilot:send", map[string]any{"conversationId": "w", "prompt": "Build it\nplease"})
	cl.WaitFor("copilot:user_message", nil)
	sent := time.Now()
	n := expectNotice(t, watcher, "w")
	latency := time.Since(sent)
	t.Logf("the notice came %s after the sender got its user_message", latency)
	if latency > time.Second { // 40 ms and scheduling; generous for a busy machine
		t.Errorf("the notice took %s", latency)
	}
	if !n.Streaming || n.Title != "Build it" || n.Mode != protocol.ModeAct || n.CreatedAt == "" || n.UpdatedAt == "" || n.Deleted {
		t.Errorf("created: %+v", n)
	}
	ft := e.agent.nextTurn(t)
	for i := range 500 {
		ft.delta("m", fmt.Sprintf("%d ", i))
	}
	res := ft.ask(session.InputRequest{Question: "Sure?"})
	if n := expectNotice(t, watcher, "w"); !n.WaitingInput || !n.Streaming {
		t.Errorf("question open: %+v", n)
	}
	req := cl.WaitFor("copilot:user_input_request", nil)
	cl.Send("copilot:user_input_response", map[string]any{"conversationId": "w", "requestId": req.Field("requestId"), "answer": "yes"})
	waitAsk(t, res)
	if n := expectNotice(t, watcher, "w"); n.WaitingInput {
		t.Errorf("question answered: %+v", n)
	}
	cl.Send("copilot:set_mode", map[string]any{"conversationId": "w", "mode": "plan"})
	if n := expectNotice(t, watcher, "w"); n.Mode != protocol.ModePlan || !n.Streaming {
		t.Errorf("mode changed: %+v", n)
	}
	ft.finish(nil)
	if n := expectNotice(t, watcher, "w"); n.Streaming {
		t.Errorf("turn over: %+v", n)
	}
	// 500 deltas, a question, a mode change: a handful of notices.
	sync_(t, watcher)
	cl.Send("copilot:delete", map[string]any{"conversationId": "w"})
	if n := expectNotice(t, watcher, "w"); !n.Deleted || n.Title != "" {
		t.Errorf("deleted: %+v", n)
	}
	if skipped := sync_(t, other); len(skipped) > 0 {
		t.Errorf("a connection that does not watch got %s", framesString(skipped))
	}

	// Several conversations changing at once: one notice each.
	for i := range 5 {
		cl.Send("copilot:set_mode", map[string]any{"conversationId": fmt.Sprintf("many-%d", i), "mode": "plan"})
		cl.Send("copilot:set_mode", map[string]any{"conversationId": fmt.Sprintf("many-%d", i), "mode": "act"})
	}
	counts := map[string]int{}
	deadline := time.Now().Add(wait)
	for len(counts) < 5 && time.Now().Before(deadline) {
		if f, ok := watcher.TryNext(time.Second); ok && f.Type == "copilot:conversation" {
			counts[f.Field("conversationId").(string)]++
		}
	}
	time.Sleep(200 * time.Millisecond)
	for _, f := range sync_(t, watcher) {
		if f.Type == "copilot:conversation" {
			counts[f.Field("conversationId").(string)]++
		}
	}
	if len(counts) != 5 {
		t.Errorf("notices for %v, want the 5 conversations", counts)
	}

	// watch: false stops them.
	listPage(t, watcher, map[string]any{"watch": false})
	cl.Send("copilot:set_mode", map[string]any{"conversationId": "after", "mode": "plan"})
	sync_(t, cl)
	time.Sleep(200 * time.Millisecond)
	if skipped := sync_(t, watcher); len(skipped) > 0 {
		t.Errorf("after watch false: %s", framesString(skipped))
	}
}
