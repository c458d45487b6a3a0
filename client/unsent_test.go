package client

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// sentID waits for the fake relay to receive a copilot:send and returns
// its clientId.
func sentID(t *testing.T, f *fakeRelay) string {
	t.Helper()
	var d protocol.Send
	if err := json.Unmarshal(recvType(t, f, protocol.TypeSend).Data, &d); err != nil || d.ClientID == "" {
		t.Fatalf("copilot:send without a clientId: %+v, %v", d, err)
	}
	return d.ClientID
}

// afterResubscribe drops every connection and returns the events about
// conv from the resubscription's copilot:subscribed on, up to the first
// one that is neither it nor TypeUnsent (a marker the test emits).
func afterResubscribe(t *testing.T, c *Client, f *fakeRelay, conv string) []Event {
	t.Helper()
	f.dropAll()
	nextEvent(t, c, func(e Event) bool { return e.Type == protocol.TypeSubscribed && e.ConversationID() == conv })
	f.emit(conv, protocol.TypeReasoning, map[string]any{"messageId": "marker", "content": "."})
	var got []Event
	for {
		ev := nextEvent(t, c, func(e Event) bool { return e.ConversationID() == conv })
		if ev.Type == protocol.TypeReasoning {
			return got
		}
		got = append(got, ev)
	}
}

// TestUnsentAfterReconnect: a prompt sent on a connection that dropped
// before the relay echoed it is given back as TypeUnsent once the
// resubscription's copilot:subscribed shows the relay does not have it
// (no echo in the replay, not named starting); one whose echo came, or
// that the relay names starting, is not; none is ever sent again.
func TestUnsentAfterReconnect(t *testing.T) {
	f := newFakeRelay(t, "")
	c := dialT(t, fastConfig(f.url(), ""))
	ctx := context.Background()
	if err := c.Subscribe(ctx, "c1", 0); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, c, func(e Event) bool { return e.Type == protocol.TypeSubscribed })

	// The relay never read it (the fake does nothing with a send).
	if err := c.Send(ctx, "c1", "deploy the fix", protocol.ModeAct, ""); err != nil {
		t.Fatal(err)
	}
	lostID := sentID(t, f)
	got := afterResubscribe(t, c, f, "c1")
	if len(got) != 1 || got[0].Type != TypeUnsent {
		t.Fatalf("after the resubscription: %+v, want one %s", got, TypeUnsent)
	}
	if u := got[0].Data.(*Unsent); u.ConversationID != "c1" || u.ClientID != lostID || u.Prompt != "deploy the fix" {
		t.Fatalf("unsent %+v", u)
	}
	if got := afterResubscribe(t, c, f, "c1"); len(got) != 0 {
		t.Fatalf("a second reconnection: %+v, want nothing (told once)", got)
	}

	// Echoed before the drop: the relay had it.
	if err := c.Send(ctx, "c1", "echoed", protocol.ModeAct, ""); err != nil {
		t.Fatal(err)
	}
	f.emit("c1", protocol.TypeUserMessage, map[string]any{"messageId": "u1", "content": "echoed", "mode": "act", "clientId": sentID(t, f)})
	f.emit("c1", protocol.TypeIdle, map[string]any{"status": "completed"})
	nextEvent(t, c, func(e Event) bool { return e.Type == protocol.TypeIdle })
	if got := afterResubscribe(t, c, f, "c1"); len(got) != 0 {
		t.Fatalf("after an echoed prompt: %+v, want nothing", got)
	}

	// Named starting (its folder being set up): held; when a later
	// resubscription no longer names it and no echo came, it is lost.
	if err := c.Send(ctx, "c1", "in a worktree", protocol.ModeAct, ""); err != nil {
		t.Fatal(err)
	}
	startingID := sentID(t, f)
	f.mu.Lock()
	f.starting = startingID
	f.mu.Unlock()
	if got := afterResubscribe(t, c, f, "c1"); len(got) != 0 {
		t.Fatalf("a prompt the relay names starting: %+v, want nothing", got)
	}
	f.mu.Lock()
	f.starting = ""
	f.mu.Unlock()
	got = afterResubscribe(t, c, f, "c1")
	if len(got) != 1 || got[0].Type != TypeUnsent || got[0].Data.(*Unsent).ClientID != startingID {
		t.Fatalf("once the relay no longer names it: %+v", got)
	}

	// Its echo comes after all (a relay of a cluster was setting it up):
	// a TypeUnsent marked Arrived follows the echo, once.
	f.emit("c1", protocol.TypeUserMessage, map[string]any{"messageId": "u2", "content": "in a worktree", "mode": "act", "clientId": startingID})
	if ev := nextEvent(t, c, func(e Event) bool { return e.ConversationID() == "c1" }); ev.Type != protocol.TypeUserMessage {
		t.Fatalf("the late echo: %+v", ev)
	}
	ev := nextEvent(t, c, func(e Event) bool { return e.ConversationID() == "c1" })
	if u, ok := ev.Data.(*Unsent); !ok || !u.Arrived || u.ClientID != startingID || u.Prompt != "in a worktree" {
		t.Fatalf("after the late echo: %+v, want an Unsent that arrived", ev)
	}
	f.emit("c1", protocol.TypeIdle, map[string]any{"status": "completed"})
	if got := afterResubscribe(t, c, f, "c1"); len(got) != 0 {
		t.Fatalf("once it arrived: %+v, want nothing", got)
	}

	sends := 0
	for _, env := range f.receivedFrames() {
		if env.Type == protocol.TypeSend {
			sends++
		}
	}
	if sends != 3 {
		t.Fatalf("the relay received %d copilot:send, want the 3 sent (none again)", sends)
	}
}

// TestRefusedSendIsNotUnsent: a send the relay refused (its error came)
// is not given back again after a reconnection: the consumer showed the
// refusal.
func TestRefusedSendIsNotUnsent(t *testing.T) {
	f := newFakeRelay(t, "")
	c := dialT(t, fastConfig(f.url(), ""))
	ctx := context.Background()
	if err := c.Send(ctx, "c1", "busy", protocol.ModeAct, ""); err != nil {
		t.Fatal(err)
	}
	sentID(t, f)
	f.mu.Lock()
	for conn := range f.conns {
		frame, _ := protocol.Encode(protocol.TypeError, protocol.Error{Code: protocol.CodeConversationBusy, Type: protocol.TypeSend, ConversationID: "c1", Message: "busy"})
		_ = conn.Write(ctx, websocket.MessageText, frame)
	}
	f.mu.Unlock()
	nextEvent(t, c, func(e Event) bool { return e.Type == protocol.TypeError })
	if got := afterResubscribe(t, c, f, "c1"); len(got) != 0 {
		t.Fatalf("after a refused send: %+v, want nothing", got)
	}
}

// TestUnsentWithAnOlderRelay: a relay that echoes no clientId has its
// echoes matched by the prompt's text, so a prompt that ran is not given
// back after a reconnection, and one that did not is.
func TestUnsentWithAnOlderRelay(t *testing.T) {
	f := newFakeRelay(t, "")
	c := dialT(t, fastConfig(f.url(), ""))
	ctx := context.Background()
	if err := c.Subscribe(ctx, "c1", 0); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, c, func(e Event) bool { return e.Type == protocol.TypeSubscribed })
	for _, p := range []string{"ran", "lost"} {
		if err := c.Send(ctx, "c1", p, protocol.ModeAct, ""); err != nil {
			t.Fatal(err)
		}
		sentID(t, f)
	}
	f.emit("c1", protocol.TypeUserMessage, map[string]any{"messageId": "u1", "content": "ran", "mode": "act"})
	nextEvent(t, c, func(e Event) bool { return e.Type == protocol.TypeUserMessage })
	got := afterResubscribe(t, c, f, "c1")
	if len(got) != 1 || got[0].Type != TypeUnsent || got[0].Data.(*Unsent).Prompt != "lost" {
		t.Fatalf("after the resubscription: %+v, want the prompt lost alone", got)
	}
}

// refuse has the fake relay answer every connection with an error for a
// copilot:send of conv naming clientID ("": none, as an older relay).
func refuse(t *testing.T, f *fakeRelay, conv, clientID string) {
	t.Helper()
	frame, err := protocol.Encode(protocol.TypeError, protocol.Error{Code: protocol.CodeConversationBusy, Type: protocol.TypeSend, ConversationID: conv, Message: "busy", ClientID: clientID})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for conn := range f.conns {
		_ = conn.Write(context.Background(), websocket.MessageText, frame)
	}
}

// TestRefusedSendComesBack: the relay's error for a send is followed by a
// TypeRefused event with the prompt it refused, for the consumer to give
// back: the one the error names by clientId, or, from a relay that names
// none, the only one on its way; with two on their way and none named,
// nothing is given back (the wrong prompt would be).
func TestRefusedSendComesBack(t *testing.T) {
	f := newFakeRelay(t, "")
	c := dialT(t, fastConfig(f.url(), ""))
	ctx := context.Background()
	if err := c.Subscribe(ctx, "c1", 0); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, c, func(e Event) bool { return e.Type == protocol.TypeSubscribed })
	refusedNext := func(want string, clientID string) {
		t.Helper()
		nextEvent(t, c, func(e Event) bool { return e.Type == protocol.TypeError })
		ev := nextEvent(t, c, func(e Event) bool { return true })
		r, ok := ev.Data.(*Refused)
		if ev.Type != TypeRefused || !ok || r.Prompt != want || r.ConversationID != "c1" || (clientID != "" && r.ClientID != clientID) || r.Err == nil {
			t.Fatalf("after the error: %+v, want the prompt %q given back", ev, want)
		}
	}
	if err := c.Send(ctx, "c1", "alone", protocol.ModeAct, ""); err != nil {
		t.Fatal(err)
	}
	sentID(t, f)
	refuse(t, f, "c1", "")
	refusedNext("alone", "")

	ids := map[string]string{}
	for _, p := range []string{"first", "second"} {
		if err := c.Send(ctx, "c1", p, protocol.ModeAct, ""); err != nil {
			t.Fatal(err)
		}
		ids[p] = sentID(t, f)
	}
	refuse(t, f, "c1", ids["second"])
	refusedNext("second", ids["second"])

	if err := c.Send(ctx, "c1", "third", protocol.ModeAct, ""); err != nil {
		t.Fatal(err)
	}
	sentID(t, f)
	refuse(t, f, "c1", "")
	nextEvent(t, c, func(e Event) bool { return e.Type == protocol.TypeError })
	f.emit("c1", protocol.TypeReasoning, map[string]any{"messageId": "marker", "content": "."})
	if ev := nextEvent(t, c, func(e Event) bool { return true }); ev.Type != protocol.TypeReasoning {
		t.Fatalf("an error naming no send, with two on their way: %+v, want nothing given back", ev)
	}
	// Neither was forgotten: both are lost with the connection.
	got := afterResubscribe(t, c, f, "c1")
	if len(got) != 2 || got[0].Data.(*Unsent).Prompt != "first" || got[1].Data.(*Unsent).Prompt != "third" {
		t.Fatalf("after the resubscription: %+v, want first and third given back as lost", got)
	}
}
