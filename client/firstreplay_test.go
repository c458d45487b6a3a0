package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// convEvents reads the next n events about conversation id (resets, its
// events, copilot:subscribed) and names them: "reset", "subscribed", or
// the seq.
func convEvents(t *testing.T, c *Client, id string, n int) string {
	t.Helper()
	var got []string
	for len(got) < n {
		ev := nextEvent(t, c, func(e Event) bool { return e.ConversationID() == id })
		switch ev.Type {
		case TypeReset:
			got = append(got, "reset")
		case protocol.TypeSubscribed:
			got = append(got, "subscribed")
		default:
			got = append(got, fmt.Sprint(ev.Seq()))
		}
	}
	return strings.Join(got, " ")
}

// TestFirstReplayDeliveredAsItComes: the replay of a first subscription
// reaches the consumer event by event, before copilot:subscribed (the relay
// here holds that back until the test lets it go), where a
// resubscription's is held until then.
func TestFirstReplayDeliveredAsItComes(t *testing.T) {
	f := newFakeRelay(t, "")
	for i := range 3 {
		f.emit("c1", protocol.TypeDelta, map[string]any{"messageId": "m1", "content": fmt.Sprint(i)})
	}
	hold := make(chan struct{})
	f.mu.Lock()
	f.hold = hold
	f.mu.Unlock()
	c := dialT(t, fastConfig(f.url(), ""))
	if err := c.Subscribe(context.Background(), "c1", 0); err != nil {
		t.Fatal(err)
	}
	if got := convEvents(t, c, "c1", 3); got != "1 2 3" {
		t.Fatalf("before copilot:subscribed: %s, want 1 2 3", got)
	}
	close(hold)
	if got := convEvents(t, c, "c1", 1); got != "subscribed" {
		t.Fatalf("then %s, want subscribed", got)
	}
	if c.LastSeq("c1") != 3 {
		t.Fatalf("LastSeq = %d, want 3", c.LastSeq("c1"))
	}
}

// TestFirstReplayCutShortStartsOver: a connection that drops during a
// first replay leaves part of a history that names no epoch; the client
// says reset and replays it from the start, once.
func TestFirstReplayCutShortStartsOver(t *testing.T) {
	f := newFakeRelay(t, "")
	for i := range 3 {
		f.emit("c1", protocol.TypeDelta, map[string]any{"messageId": "m1", "content": fmt.Sprint(i)})
	}
	f.mu.Lock()
	f.hold = make(chan struct{}) // never closed: the first replay never ends
	f.mu.Unlock()
	c := dialT(t, fastConfig(f.url(), ""))
	if err := c.Subscribe(context.Background(), "c1", 0); err != nil {
		t.Fatal(err)
	}
	if got := convEvents(t, c, "c1", 3); got != "1 2 3" {
		t.Fatalf("the first replay: %s, want 1 2 3", got)
	}
	recvType(t, f, protocol.TypeSubscribe)
	f.mu.Lock()
	f.hold = nil
	f.mu.Unlock()
	f.dropAll()
	if got := convEvents(t, c, "c1", 5); got != "reset 1 2 3 subscribed" {
		t.Fatalf("after the drop: %s, want reset 1 2 3 subscribed", got)
	}
	sub := recvType(t, f, protocol.TypeSubscribe)
	var s protocol.Subscribe
	if err := json.Unmarshal(sub.Data, &s); err != nil || s.SinceSeq == nil || *s.SinceSeq != 0 {
		t.Fatalf("renewed subscription = %s, want sinceSeq 0", sub.Data)
	}
}
