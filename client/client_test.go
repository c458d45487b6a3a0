package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// waitFor bounds a wait for what does come: generous, as a busy machine
// with -race can hold a goroutine for seconds.
const waitFor = 30 * time.Second

// fastConfig shortens every timer so that reconnect tests run in
// milliseconds, not seconds.
func fastConfig(url, token string) Config {
	return Config{
		URL:          url,
		Token:        token,
		MinBackoff:   10 * time.Millisecond,
		MaxBackoff:   50 * time.Millisecond,
		OfflineAfter: time.Hour,
	}
}

func dialT(t *testing.T, cfg Config) *Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := cfg.Dial(ctx)
	if err != nil {
		cancel()
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		cancel()
	})
	return c
}

// nextEvent returns the next event that satisfies keep, failing the test
// after waitFor.
func nextEvent(t *testing.T, c *Client, keep func(Event) bool) Event {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				t.Fatal("events channel closed")
			}
			if keep(ev) {
				return ev
			}
		case <-deadline:
			t.Fatal("timed out waiting for an event")
		}
	}
}

func isType(typ string) func(Event) bool {
	return func(e Event) bool { return e.Type == typ }
}

func isState(s State) func(Event) bool {
	return func(e Event) bool {
		sc, ok := e.Data.(*StateChange)
		return ok && sc.State == s
	}
}

func recvType(t *testing.T, f *fakeRelay, typ string) protocol.Envelope {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case env := <-f.recvCh:
			if env.Type == typ {
				return env
			}
		case <-deadline:
			t.Fatalf("fake relay never received %s", typ)
		}
	}
}

func TestDialRefusesWrongToken(t *testing.T) {
	f := newFakeRelay(t, "secret")
	_, err := Dial(context.Background(), f.url(), "wrong")
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("want a 401 error, got %v", err)
	}
}

func TestDialUnreachable(t *testing.T) {
	_, err := Config{URL: "ws://127.0.0.1:1/ws", DialTimeout: 2 * time.Second}.Dial(context.Background())
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("want an error naming the address, got %v", err)
	}
}

func TestSubscribeDecodesAndSends(t *testing.T) {
	f := newFakeRelay(t, "tok")
	f.emit("c1", protocol.TypeUserMessage, map[string]any{"messageId": "u1", "content": "hi", "mode": "act"})
	f.emit("c1", protocol.TypeDelta, map[string]any{"messageId": "m1", "content": "Hel"})
	c := dialT(t, fastConfig(f.url(), "tok"))

	if err := c.Subscribe(context.Background(), "c1", 0); err != nil {
		t.Fatal(err)
	}
	um := nextEvent(t, c, isType(protocol.TypeUserMessage))
	if d := um.Data.(*protocol.UserMessage); d.Content != "hi" || d.Seq != 1 || d.Mode != protocol.ModeAct {
		t.Fatalf("user message decoded as %+v", d)
	}
	dl := nextEvent(t, c, isType(protocol.TypeDelta))
	if d := dl.Data.(*protocol.Delta); d.Content != "Hel" || dl.Seq() != 2 || dl.ConversationID() != "c1" {
		t.Fatalf("delta decoded as %+v", d)
	}
	sub := nextEvent(t, c, isType(protocol.TypeSubscribed)).Data.(*protocol.Subscribed)
	if sub.Seq != 2 || sub.Epoch != "epoch-1" {
		t.Fatalf("subscribed = %+v", sub)
	}

	// Each helper sends the message docs/protocol.md names, with its fields.
	ctx := context.Background()
	checks := []struct {
		send func() error
		typ  string
		want string
	}{
		{func() error { return c.Send(ctx, "c1", "do it", protocol.ModePlan, "") }, protocol.TypeSend, `{"conversationId":"c1","prompt":"do it","mode":"plan"}`},
		{func() error { return c.Abort(ctx, "c1") }, protocol.TypeAbort, `{"conversationId":"c1"}`},
		{func() error { return c.SetMode(ctx, "c1", protocol.ModeAct) }, protocol.TypeSetMode, `{"conversationId":"c1","mode":"act"}`},
		{func() error { i := 1; return c.Answer(ctx, "c1", "r1", "prod", false, &i) }, protocol.TypeUserInputResponse, `{"conversationId":"c1","requestId":"r1","answer":"prod","wasFreeform":false,"index":1}`},
		{func() error { return c.Reject(ctx, "c1", "r2") }, protocol.TypeUserInputResponse, `{"conversationId":"c1","requestId":"r2","answer":"reject","rejected":true}`},
		{func() error { return c.List(ctx) }, protocol.TypeList, ``},
		{func() error { return c.CloseConversation(ctx, "c1") }, protocol.TypeClose, `{"conversationId":"c1"}`},
		{func() error { return c.DeleteConversation(ctx, "c9") }, protocol.TypeDelete, `{"conversationId":"c9"}`},
		{func() error { return c.Unsubscribe(ctx, "c1") }, protocol.TypeUnsubscribe, `{"conversationId":"c1"}`},
	}
	for _, ch := range checks {
		if err := ch.send(); err != nil {
			t.Fatalf("%s: %v", ch.typ, err)
		}
		env := recvType(t, f, ch.typ)
		if ch.typ == protocol.TypeSend {
			// The clientId is the client's own making (a UUID): its echo
			// says the relay got the prompt (unsent_test.go).
			id := regexp.MustCompile(`,"clientId":"[0-9a-f-]{36}"`)
			if !id.Match(env.Data) {
				t.Errorf("copilot:send without a clientId: %s", env.Data)
			}
			env.Data = id.ReplaceAll(env.Data, nil)
		}
		if string(env.Data) != ch.want {
			t.Errorf("%s data = %s, want %s", ch.typ, env.Data, ch.want)
		}
	}
}

func TestLiveEventsAreNotRepeated(t *testing.T) {
	f := newFakeRelay(t, "")
	f.sloppy = true
	c := dialT(t, fastConfig(f.url(), ""))
	if err := c.Subscribe(context.Background(), "c1", 0); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, c, isType(protocol.TypeSubscribed))
	f.emit("c1", protocol.TypeDelta, map[string]any{"messageId": "m1", "content": "a"})
	f.emit("c1", protocol.TypeDelta, map[string]any{"messageId": "m1", "content": "b"})
	nextEvent(t, c, func(e Event) bool { return e.Seq() == 2 })
	// A second subscribe from seq 2 on a sloppy relay replays seq 1 and 2
	// again; the client must not deliver them twice.
	if err := c.Subscribe(context.Background(), "c1", 2); err != nil {
		t.Fatal(err)
	}
	f.emit("c1", protocol.TypeDelta, map[string]any{"messageId": "m1", "content": "c"})
	var got []int64
	for len(got) == 0 || got[len(got)-1] != 3 {
		ev := nextEvent(t, c, func(e Event) bool { return e.Seq() > 0 })
		got = append(got, ev.Seq())
	}
	if fmt.Sprint(got) != "[3]" {
		t.Fatalf("seqs delivered after the resubscribe = %v, want [3]", got)
	}
}

// TestReconnectResumes drops the connection while events keep coming: the
// client reports reconnecting, then live, renews its subscription from the
// last seq it saw and delivers every missed event exactly once, in order.
func TestReconnectResumes(t *testing.T) {
	f := newFakeRelay(t, "tok")
	f.sloppy = true
	c := dialT(t, fastConfig(f.url(), "tok"))
	ctx := context.Background()
	if err := c.Subscribe(ctx, "c1", 0); err != nil {
		t.Fatal(err)
	}
	recvType(t, f, protocol.TypeSubscribe)
	nextEvent(t, c, isType(protocol.TypeSubscribed))
	for i := range 3 {
		f.emit("c1", protocol.TypeDelta, map[string]any{"messageId": "m1", "content": fmt.Sprint(i)})
	}
	nextEvent(t, c, func(e Event) bool { return e.Seq() == 3 })

	f.dropAll()
	nextEvent(t, c, isState(StateReconnecting))
	for i := 3; i < 6; i++ {
		f.emit("c1", protocol.TypeDelta, map[string]any{"messageId": "m1", "content": fmt.Sprint(i)})
	}
	nextEvent(t, c, isState(StateLive))
	sub := recvType(t, f, protocol.TypeSubscribe)
	var s protocol.Subscribe
	if err := json.Unmarshal(sub.Data, &s); err != nil || s.SinceSeq == nil || *s.SinceSeq != 3 {
		t.Fatalf("renewed subscription = %s, want sinceSeq 3", sub.Data)
	}
	f.emit("c1", protocol.TypeIdle, map[string]any{"status": "completed"})

	var text strings.Builder
	var seqs []int64
	for {
		ev := nextEvent(t, c, func(e Event) bool { return e.Seq() > 0 })
		seqs = append(seqs, ev.Seq())
		if d, ok := ev.Data.(*protocol.Delta); ok {
			text.WriteString(d.Content)
		}
		if ev.Type == protocol.TypeIdle {
			break
		}
	}
	if fmt.Sprint(seqs) != "[4 5 6 7]" || text.String() != "345" {
		t.Fatalf("after reconnect: seqs %v text %q, want [4 5 6 7] and \"345\"", seqs, text.String())
	}
	if c.LastSeq("c1") != 7 {
		t.Fatalf("LastSeq = %d", c.LastSeq("c1"))
	}
}

// TestEpochChangeReplaysFromStart: after a reconnect the relay has a
// different history of the conversation. The client resumes with the epoch
// it holds; the relay decides, replays from seq 0 and says reset; the client
// reports the reset and delivers the new history once, with a single
// subscribe (no second round trip).
func TestEpochChangeReplaysFromStart(t *testing.T) {
	f := newFakeRelay(t, "")
	c := dialT(t, fastConfig(f.url(), ""))
	ctx := context.Background()
	if err := c.Subscribe(ctx, "c1", 0); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		f.emit("c1", protocol.TypeDelta, map[string]any{"messageId": "old", "content": fmt.Sprint(i)})
	}
	nextEvent(t, c, func(e Event) bool { return e.Seq() == 3 })

	f.resetHistory("epoch-2")
	for i := range 5 {
		f.emit("c1", protocol.TypeDelta, map[string]any{"messageId": "new", "content": fmt.Sprint(i)})
	}
	f.dropAll()

	nextEvent(t, c, isType(TypeReset))
	var seqs []int64
	for {
		ev := nextEvent(t, c, func(e Event) bool { return e.Seq() > 0 || e.Type == protocol.TypeSubscribed })
		if ev.Type == protocol.TypeSubscribed {
			if ep := ev.Data.(*protocol.Subscribed).Epoch; ep != "epoch-2" {
				t.Fatalf("subscribed epoch %q", ep)
			}
			break
		}
		if d := ev.Data.(*protocol.Delta); d.MessageID != "new" {
			t.Fatalf("delivered an event of the lost history: %+v", d)
		}
		seqs = append(seqs, ev.Seq())
	}
	if fmt.Sprint(seqs) != "[1 2 3 4 5]" {
		t.Fatalf("replayed seqs %v, want [1 2 3 4 5]", seqs)
	}
	var subs []string
	for _, env := range f.receivedFrames() {
		if env.Type == protocol.TypeSubscribe {
			subs = append(subs, string(env.Data))
		}
	}
	// The first subscribe, then exactly one renewal carrying the old epoch.
	if len(subs) != 2 || !strings.Contains(subs[1], `"epoch":"epoch-1"`) {
		t.Fatalf("subscribes sent %q, want the first and one renewal with the held epoch", subs)
	}
}

func TestPingsAndDeadConnection(t *testing.T) {
	f := newFakeRelay(t, "")
	cfg := fastConfig(f.url(), "")
	cfg.PingInterval = 30 * time.Millisecond
	cfg.PongTimeout = 100 * time.Millisecond
	c := dialT(t, cfg)
	recvType(t, f, protocol.TypePing)
	nextEvent(t, c, isType(protocol.TypePong))

	// A relay that stops answering is detected and replaced.
	f.setSilent(true)
	nextEvent(t, c, isState(StateReconnecting))
	f.setSilent(false)
	nextEvent(t, c, isState(StateLive))
}

func TestCloseStopsEverything(t *testing.T) {
	f := newFakeRelay(t, "")
	c, err := fastConfig(f.url(), "").Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for range c.Events() {
	}
	if c.State() != StateClosed {
		t.Fatalf("state after Close = %v", c.State())
	}
	if err := c.List(context.Background()); err != ErrClosed {
		t.Fatalf("List after Close = %v, want ErrClosed", err)
	}
}

func TestContextEndsClient(t *testing.T) {
	f := newFakeRelay(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	c, err := fastConfig(f.url(), "").Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for range c.Events() {
	}
	c.Close()
}

func TestSendWhileDisconnected(t *testing.T) {
	f := newFakeRelay(t, "")
	cfg := fastConfig(f.url(), "")
	cfg.MinBackoff = time.Hour // stay down
	cfg.MaxBackoff = time.Hour
	c := dialT(t, cfg)
	f.waitJoined(t)
	f.dropAll()
	nextEvent(t, c, isState(StateReconnecting))
	err := c.Send(context.Background(), "c1", "x", "", "")
	if err == nil || !strings.Contains(err.Error(), ErrNotConnected.Error()) {
		t.Fatalf("send while down = %v", err)
	}
	if err := c.Subscribe(context.Background(), "c1", 0); err != nil {
		t.Fatalf("subscribe while down should be remembered, got %v", err)
	}
}

func TestOfflineAfterFailures(t *testing.T) {
	f := newFakeRelay(t, "")
	cfg := fastConfig(f.url(), "")
	cfg.OfflineAfter = 20 * time.Millisecond
	c := dialT(t, cfg)
	f.waitJoined(t)
	f.srv.Close() // nothing listens any more
	f.dropAll()   // and the hijacked connection goes too
	ev := nextEvent(t, c, isState(StateOffline))
	if sc := ev.Data.(*StateChange); sc.Err == nil || sc.Attempt == 0 {
		t.Fatalf("offline state without a cause: %+v", sc)
	}
}

func TestDecode(t *testing.T) {
	ev, err := Decode([]byte(`{"type":"copilot:future","data":{"x":1}}`))
	if err != nil || ev.Data != nil || ev.Type != "copilot:future" {
		t.Fatalf("unknown type: %+v %v", ev, err)
	}
	if _, err := Decode([]byte(`{"type":"copilot:delta","data":{"content":5}}`)); err == nil {
		t.Fatal("a delta with a numeric content decoded")
	}
	if _, err := Decode([]byte(`{"type":"copilot:delta"}`)); err == nil {
		t.Fatal("a delta without data decoded")
	}
	if _, err := Decode([]byte(`[1]`)); err == nil {
		t.Fatal("an array decoded")
	}
	ev, err = Decode([]byte(`{"type":"pong"}`))
	if err != nil || ev.Type != protocol.TypePong {
		t.Fatalf("pong: %+v %v", ev, err)
	}
	ev, err = Decode([]byte(`{"type":"copilot:user_input_request","data":{"conversationId":"c","seq":4,"requestId":"r","question":"q?","choices":["a","b"],"allowFreeform":false,"inputType":"choice"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := ev.Data.(*protocol.UserInputRequest); r.InputType != "choice" || len(r.Choices) != 2 || ev.Seq() != 4 {
		t.Fatalf("request decoded as %+v", r)
	}
}

func TestIsRejection(t *testing.T) {
	for in, want := range map[string]bool{"r": true, " /reject ": true, "R": false, "reject": false, "rr": false, "": false} {
		if IsRejection(in) != want {
			t.Errorf("IsRejection(%q) = %v", in, !want)
		}
	}
}

// TestReconnectRefusedTokenStops: a relay that answers a reconnection with
// HTTP 401 (the token was revoked or expired while the connection was
// down) is not dialled again: the client stops with ErrRevoked.
func TestReconnectRefusedTokenStops(t *testing.T) {
	f := newFakeRelay(t, "secret")
	c := dialT(t, fastConfig(f.url(), "secret"))
	f.waitJoined(t)
	f.mu.Lock()
	f.token = "another"
	f.mu.Unlock()
	f.dropAll()
	ev := nextEvent(t, c, isState(StateClosed))
	if sc := ev.Data.(*StateChange); !errors.Is(sc.Err, ErrRevoked) {
		t.Fatalf("closed with %v, want ErrRevoked", sc.Err)
	}
	select {
	case _, ok := <-c.Events():
		if ok {
			t.Fatal("an event after the final state")
		}
	case <-time.After(waitFor):
		t.Fatal("the events channel stays open")
	}
}

// While a conversation the client follows streams, a silent socket (a
// relay paused or cut off without closing it) is given up after
// StreamingPingInterval and StreamingPongTimeout, not the idle ones; the
// client resubscribes elsewhere, and once the turn has ended the idle
// limits apply again.
func TestSilenceWhileStreaming(t *testing.T) {
	f := newFakeRelay(t, "")
	cfg := fastConfig(f.url(), "")
	cfg.PingInterval, cfg.PongTimeout = time.Hour, time.Hour
	cfg.StreamingPingInterval, cfg.StreamingPongTimeout = 30*time.Millisecond, 100*time.Millisecond
	c := dialT(t, cfg)
	if err := c.Subscribe(context.Background(), "c1", 0); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, c, isType(protocol.TypeSubscribed))
	if ping, _ := c.silenceLimits(); ping != time.Hour {
		t.Fatalf("no turn runs and the client pings after %v", ping)
	}

	f.emit("c1", protocol.TypeUserMessage, map[string]any{"messageId": "u1", "content": "hi", "mode": "act"})
	nextEvent(t, c, isType(protocol.TypeUserMessage))
	f.setSilent(true)
	recvType(t, f, protocol.TypePing)
	nextEvent(t, c, isState(StateReconnecting))
	f.setSilent(false)
	nextEvent(t, c, isState(StateLive))

	f.emit("c1", protocol.TypeIdle, map[string]any{"status": "completed"})
	nextEvent(t, c, isType(protocol.TypeIdle))
	if ping, pong := c.silenceLimits(); ping != time.Hour || pong != time.Hour {
		t.Fatalf("after the turn the client pings after %v and waits %v", ping, pong)
	}
}
