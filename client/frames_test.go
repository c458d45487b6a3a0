package client

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"weak"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestDecodeKeepsNothingOfTheFrame: an event holds only what was decoded
// from its frame, so the frame can be collected (or its buffer reused) as
// soon as it is decoded. Events kept a copy of their frame (Event.Raw),
// which held a replay's every frame alive as long as its events.
func TestDecodeKeepsNothingOfTheFrame(t *testing.T) {
	frame := fmt.Appendf(nil, `{"type":"copilot:delta","data":{"conversationId":"c","seq":1,"messageId":"m","content":%q}}`, strings.Repeat("word ", 2000))
	gone := weak.Make(&frame[0])
	ev, err := Decode(frame)
	if err != nil {
		t.Fatal(err)
	}
	frame = nil
	runtime.GC()
	if gone.Value() != nil {
		t.Fatal("the decoded event keeps its frame alive")
	}
	if d, ok := ev.Data.(*protocol.Delta); !ok || d.Content != strings.Repeat("word ", 2000) {
		t.Fatalf("decoded %#v", ev.Data)
	}
}

// TestEventsOutliveTheReadBuffer: the client reads every frame into one
// buffer, so an event must not point into it: events delivered earlier are
// unchanged once later frames (longer, shorter, of every kind of field)
// have been read over them.
func TestEventsOutliveTheReadBuffer(t *testing.T) {
	f := newFakeRelay(t, "")
	f.emit("c1", protocol.TypeUserMessage, map[string]any{"messageId": "u1", "content": "a prompt of some length", "mode": "act"})
	f.emit("c1", protocol.TypeDelta, map[string]any{"messageId": "m1", "content": strings.Repeat("long text ", 300)})
	f.emit("c1", protocol.TypeToolStart, map[string]any{"toolCallId": "t1", "toolName": "bash", "arguments": map[string]any{"command": "go test ./..."}})
	f.emit("c1", protocol.TypeToolEnd, map[string]any{"toolCallId": "t1", "success": true, "result": "ok"})
	f.emit("c1", protocol.TypeDelta, map[string]any{"messageId": "m1", "content": "x"})
	f.emit("c1", protocol.TypeMessage, map[string]any{"messageId": "m1", "content": strings.Repeat("Z", 5000)})
	f.mu.Lock()
	want := make([]any, 0, len(f.logs["c1"]))
	for _, frame := range f.logs["c1"] {
		ev, err := protocol.DecodeEvent(frame)
		if err != nil {
			f.mu.Unlock()
			t.Fatal(err)
		}
		want = append(want, ev.Data)
	}
	f.mu.Unlock()

	c := dialT(t, fastConfig(f.url(), ""))
	if err := c.Subscribe(context.Background(), "c1", 0); err != nil {
		t.Fatal(err)
	}
	var got []any
	for {
		ev := nextEvent(t, c, func(e Event) bool { return e.ConversationID() == "c1" })
		if ev.Type == protocol.TypeSubscribed {
			break
		}
		got = append(got, ev.Data)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("event %d changed after later frames were read:\n got %#v\nwant %#v", i+1, got[i], want[i])
		}
	}
}
