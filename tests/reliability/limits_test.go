package reliability

import (
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// The connection and subscription limits are relay.Config settings that
// `serve` does not expose as flags (its defaults are 10,000 connections and
// 1,000 subscriptions per connection), so they are tested on a relay started
// in-process with small limits.

// TestConnectionLimit: the connection over the limit gets `error` code
// limit and a close (1013, try again later); once a connection ends, a new
// one gets in.
func TestConnectionLimit(t *testing.T) {
	t.Parallel()
	srv := relaytest.Start(t, relay.Config{Token: "limit-token", MaxConnections: 3})
	var open []*relaytest.Client
	for range 3 {
		cl := srv.Dial(t)
		expectPong(t, cl, "connecting under the limit")
		open = append(open, cl)
	}
	over := srv.Dial(t)
	f, ok := over.TryNext(timeout)
	if !ok || f.Type != "error" {
		t.Fatalf("the connection over the limit got %s (%v), want an error", f.Raw, over.Err())
	}
	if m := dataOf(t, f); m["code"] != protocol.CodeLimit || len(m["message"].(string)) < 20 {
		t.Errorf("over the limit: %s, want code limit and a sentence", f.Raw)
	}
	if code, _ := over.WaitClosed(); code != websocket.StatusTryAgainLater {
		t.Errorf("over the limit: closed with %d, want %d", code, websocket.StatusTryAgainLater)
	}
	// The three still work.
	for _, cl := range open {
		expectPong(t, cl, "another connection was refused")
	}

	// One leaves; the relay notices and lets a new one in.
	open[0].Close()
	deadline := time.Now().Add(timeout)
	for {
		cl := srv.Dial(t)
		cl.Send("ping", nil)
		f, ok := cl.TryNext(timeout)
		if ok && f.Type == "pong" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no room for a new connection %s after one closed: %s", timeout, f.Raw)
		}
		cl.Close()
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSubscriptionLimit: a subscription over the per-connection limit (by
// subscribe or by send, which subscribes) gets `error` code limit naming the
// conversation; the connection stays, and after an unsubscribe there is
// room again.
func TestSubscriptionLimit(t *testing.T) {
	t.Parallel()
	srv := relaytest.Start(t, relay.Config{MaxSubscriptions: 2})
	cl := srv.Dial(t)
	a, b, c := uuid.NewString(), uuid.NewString(), uuid.NewString()
	for _, id := range []string{a, b} {
		cl.Send("copilot:subscribe", map[string]any{"conversationId": id})
		cl.Expect("copilot:subscribed")
	}
	// Subscribing again to one it has is not a new subscription.
	cl.Send("copilot:subscribe", map[string]any{"conversationId": a, "sinceSeq": 0})
	cl.Expect("copilot:subscribed")

	for _, msg := range []struct {
		typ  string
		data map[string]any
	}{
		{"copilot:subscribe", map[string]any{"conversationId": c}},
		{"copilot:send", map[string]any{"conversationId": c, "prompt": "hello"}},
	} {
		cl.Send(msg.typ, msg.data)
		f := cl.Expect("error")
		m := dataOf(t, f)
		if m["code"] != protocol.CodeLimit || m["conversationId"] != c || m["type"] != msg.typ {
			t.Errorf("%s over the limit: %s, want code limit for %s", msg.typ, f.Raw, c)
		}
		expectPong(t, cl, msg.typ+" over the subscription limit")
	}

	cl.Send("copilot:unsubscribe", map[string]any{"conversationId": a})
	cl.Send("copilot:send", map[string]any{"conversationId": c, "prompt": "hello"})
	idle := cl.WaitFor("copilot:idle", func(f relaytest.Frame) bool { return f.Field("conversationId") == c })
	if idle.Field("status") != "completed" {
		t.Errorf("after an unsubscribe the send ran: %s", idle.Raw)
	}
}
