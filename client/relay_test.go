package client_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/client/clienttest"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// A turn that streams ten numbered deltas slowly enough that the connection
// can be cut in the middle of it.
const countScript = `{"turns":[{"match":"count","steps":[
 {"delta":"zero "},{"sleep":"30ms"},{"delta":"one "},{"sleep":"30ms"},{"delta":"two "},{"sleep":"30ms"},
 {"delta":"three "},{"sleep":"30ms"},{"delta":"four "},{"sleep":"30ms"},{"delta":"five "},{"sleep":"30ms"},
 {"delta":"six "},{"sleep":"30ms"},{"delta":"seven "},{"sleep":"30ms"},{"delta":"eight "},{"sleep":"30ms"},
 {"delta":"nine"}]}]}`

func startRelay(t *testing.T) *relaytest.Server {
	t.Helper()
	s, err := script.Parse("count.json", []byte(countScript))
	if err != nil {
		t.Fatal(err)
	}
	return relaytest.Start(t, relay.Config{Agent: script.New(s), Token: "t0ken"})
}

// TestRealRelayReconnectMidStream cuts the network in the middle of a turn
// on a real relay with the scripted agent: the client reconnects, resumes
// from the last seq it delivered, and the consumer sees every event exactly
// once, in order, with no gap.
func TestRealRelayReconnectMidStream(t *testing.T) {
	srv := startRelay(t)
	proxy := clienttest.StartProxy(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.Config{URL: proxy.URL, Token: srv.Token, MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	const conv = "7f9c2a5e-0000-4000-8000-000000000001"
	if err := c.Subscribe(ctx, conv, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, conv, "count please", "", ""); err != nil {
		t.Fatal(err)
	}

	deadline := time.After(relaytest.Timeout)
	var seqs []int64
	var text strings.Builder
	dropped, reconnected := false, false
	for {
		var ev client.Event
		select {
		case ev = <-c.Events():
		case <-deadline:
			t.Fatalf("timed out; seqs so far %v, text %q", seqs, text.String())
		}
		if sc, ok := ev.Data.(*client.StateChange); ok {
			if dropped && sc.State == client.StateLive {
				reconnected = true
			}
			continue
		}
		if s := ev.Seq(); s > 0 {
			seqs = append(seqs, s)
		}
		switch d := ev.Data.(type) {
		case *protocol.Delta:
			text.WriteString(d.Content)
			if !dropped && strings.Contains(text.String(), "two") {
				dropped = true
				proxy.DropAll()
			}
		case *protocol.Idle:
			if d.Status != protocol.StatusCompleted {
				t.Fatalf("turn ended %s", d.Status)
			}
		}
		if ev.Type == protocol.TypeIdle {
			break
		}
	}
	if !reconnected {
		t.Fatal("the client never reported going live again")
	}
	if text.String() != "zero one two three four five six seven eight nine" {
		t.Fatalf("streamed text %q", text.String())
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("seqs not consecutive: %v", seqs)
		}
	}
	if seqs[0] != 1 {
		t.Fatalf("first seq %d: %v", seqs[0], seqs)
	}
}

func TestRealRelayWrongToken(t *testing.T) {
	srv := startRelay(t)
	_, err := client.Dial(context.Background(), srv.URL, "nope")
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong token: %v", err)
	}
}

// TestRealRelayErrors: the relay's error messages arrive decoded.
func TestRealRelayErrors(t *testing.T) {
	srv := startRelay(t)
	ctx := context.Background()
	c, err := client.Dial(ctx, srv.URL, srv.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Abort(ctx, "7f9c2a5e-0000-4000-8000-000000000002"); err != nil {
		t.Fatal(err)
	}
	for ev := range c.Events() {
		if e, ok := ev.Data.(*protocol.Error); ok {
			if e.Code != protocol.CodeNotStreaming {
				t.Fatalf("error %+v", e)
			}
			return
		}
	}
}

// nextOf waits for the next event of type typ from c.
func nextOf(t *testing.T, c *client.Client, typ string) client.Event {
	t.Helper()
	deadline := time.After(relaytest.Timeout)
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				t.Fatalf("events closed while waiting for %s", typ)
			}
			if ev.Type == typ {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s within %s", typ, relaytest.Timeout)
		}
	}
}

// TestRealRelayListPageAndWatch: ListPage pages the list with the relay's
// cursors; Watch turns the change notices on, and the client turns them on
// again after a reconnect.
func TestRealRelayListPageAndWatch(t *testing.T) {
	srv := startRelay(t)
	proxy := clienttest.StartProxy(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.Config{URL: proxy.URL, Token: srv.Token, MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	other, err := client.Dial(ctx, srv.URL, srv.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	touch := func(id string) {
		t.Helper()
		// SetMode returns once the frame is written, and the relay lists
		// a conversation (and tells watchers of it) only once its event
		// is stored and sent, after set_mode has been answered: a pong
		// on other proves the first, not the second, and c's list could
		// come between them on a busy machine. The mode_changed that
		// other, subscribed first, receives is sent once it is stored.
		if err := other.Subscribe(ctx, id, 0); err != nil {
			t.Fatal(err)
		}
		if err := other.SetMode(ctx, id, protocol.ModePlan); err != nil {
			t.Fatal(err)
		}
		for nextOf(t, other, protocol.TypeModeChanged).ConversationID() != id {
		}
	}
	ids := []string{"7f9c2a5e-0000-4000-8000-00000000000a", "7f9c2a5e-0000-4000-8000-00000000000b", "7f9c2a5e-0000-4000-8000-00000000000c"}
	for _, id := range ids {
		touch(id)
		time.Sleep(2 * time.Millisecond) // distinct updatedAt
	}

	// Two pages of two and one, newest first.
	var got []string
	cursor := ""
	for range 2 {
		if err := c.ListPage(ctx, 2, cursor); err != nil {
			t.Fatal(err)
		}
		page := nextOf(t, c, protocol.TypeConversations).Data.(*protocol.Conversations)
		for _, e := range page.Conversations {
			got = append(got, e.ConversationID)
		}
		cursor = page.NextCursor
	}
	if strings.Join(got, " ") != ids[2]+" "+ids[1]+" "+ids[0] || cursor != "" {
		t.Fatalf("pages %v, cursor %q", got, cursor)
	}

	if err := c.Watch(ctx, true); err != nil {
		t.Fatal(err)
	}
	nextOf(t, c, protocol.TypeConversations) // the watch is answered with the first page
	touch("7f9c2a5e-0000-4000-8000-00000000000d")
	if n := nextOf(t, c, protocol.TypeConversation).Data.(*protocol.ConversationChanged); n.ConversationID != "7f9c2a5e-0000-4000-8000-00000000000d" {
		t.Fatalf("notice %+v", n)
	}

	// After a reconnect the notices still come.
	proxy.DropAll()
	nextOf(t, c, client.TypeState)
	for {
		ev := nextOf(t, c, client.TypeState)
		if ev.Data.(*client.StateChange).State == client.StateLive {
			break
		}
	}
	nextOf(t, c, protocol.TypeConversations) // the renewed watch's answer
	touch("7f9c2a5e-0000-4000-8000-00000000000e")
	if n := nextOf(t, c, protocol.TypeConversation).Data.(*protocol.ConversationChanged); n.ConversationID != "7f9c2a5e-0000-4000-8000-00000000000e" {
		t.Fatalf("notice after the reconnect %+v", n)
	}

	// Watch(false) stops them.
	if err := c.Watch(ctx, false); err != nil {
		t.Fatal(err)
	}
	nextOf(t, c, protocol.TypeConversations)
	touch("7f9c2a5e-0000-4000-8000-00000000000f")
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	for pongs := 0; pongs < 2; {
		select {
		case ev := <-c.Events():
			if ev.Type == protocol.TypeConversation {
				t.Fatalf("a notice after Watch(false): %+v", ev.Data)
			}
			if ev.Type == protocol.TypePong {
				pongs++
			}
		case <-time.After(relaytest.Timeout):
			t.Fatal("no pong")
		}
	}
}

// TestRealRelayClientKind: Config.Kind reaches the relay as ?client=, so
// the prompt's sentBy names the kind (and the relay's own device).
func TestRealRelayClientKind(t *testing.T) {
	srv := startRelay(t)
	c, err := client.Config{URL: srv.URL, Token: srv.Token, Kind: protocol.ClientTerminal}.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Send(ctx, "kind", "count", protocol.ModeAct, ""); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(relaytest.Timeout)
	for {
		select {
		case ev := <-c.Events():
			if um, ok := ev.Data.(*protocol.UserMessage); ok {
				if um.SentBy == nil || *um.SentBy != (protocol.By{Device: protocol.OwnDevice, Client: protocol.ClientTerminal}) {
					t.Fatalf("sentBy %+v", um.SentBy)
				}
				return
			}
		case <-timeout:
			t.Fatal("no copilot:user_message")
		}
	}
}

// TestRealRelayRevokedTokenStops: a device whose token is revoked is
// closed with 4003; the client does not reconnect (the relay would only
// refuse it), its last state is StateClosed with ErrRevoked, which says
// what to do, and its events channel closes. A token that expires does the
// same.
func TestRealRelayRevokedTokenStops(t *testing.T) {
	srv := relaytest.Start(t, relay.Config{Token: "t0ken"})
	ctx := context.Background()
	// The expiring token's 3 s are for making the device and the dial's
	// upgrade, which a busy machine with -race can hold past the 700 ms
	// it was (the dial then got 401); the relay closes it at the expiry.
	for _, expires := range []time.Duration{0, 3 * time.Second} {
		name := "phone-" + expires.String()
		var until time.Time
		if expires > 0 {
			until = time.Now().Add(expires)
		}
		token, _, err := srv.Relay.CreateDevice(ctx, relay.NewDevice{Name: name, Role: protocol.RoleController, Expires: until})
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.Config{URL: srv.URL, Token: token, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}.Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if expires == 0 {
			if err := srv.Relay.RevokeDevice(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
		var last *client.StateChange
		timeout := time.After(relaytest.Timeout)
	read:
		for {
			select {
			case ev, ok := <-c.Events():
				if !ok {
					break read
				}
				if sc, ok := ev.Data.(*client.StateChange); ok {
					if sc.State == client.StateReconnecting {
						t.Fatalf("%s: the client reconnects after 4003: %+v", name, sc)
					}
					last = sc
				}
			case <-timeout:
				t.Fatalf("%s: the client did not stop; last state %+v", name, last)
			}
		}
		if last == nil || last.State != client.StateClosed || !errors.Is(last.Err, client.ErrRevoked) {
			t.Fatalf("%s: last state %+v, want closed with ErrRevoked", name, last)
		}
		if !strings.Contains(last.Err.Error(), "revoked or expired; ask for a new one") {
			t.Fatalf("%s: %q does not say what to do", name, last.Err)
		}
		if c.State() != client.StateClosed {
			t.Fatalf("%s: State() = %v", name, c.State())
		}
		if err := c.Send(ctx, "x", "hi", "", ""); !errors.Is(err, client.ErrClosed) {
			t.Fatalf("%s: a send after the stop: %v", name, err)
		}
		c.Close()
	}
}

// TestDroppedConnectionIsNoWarning: a dropped connection is said by the
// client's consumer, from the state change that carries its error; the
// client itself logs it below warning level, so that the terminal, which
// shows the warnings as log lines, does not say it twice.
func TestDroppedConnectionIsNoWarning(t *testing.T) {
	srv := startRelay(t)
	proxy := clienttest.StartProxy(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var warnings warnCounter
	c, err := client.Config{URL: proxy.URL, Token: srv.Token, MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
		Logger: slog.New(&warnings)}.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	proxy.DropAll()
	deadline := time.After(relaytest.Timeout)
	dropped := false
	for {
		var ev client.Event
		select {
		case ev = <-c.Events():
		case <-deadline:
			t.Fatal("the client did not reconnect")
		}
		sc, ok := ev.Data.(*client.StateChange)
		if !ok {
			continue
		}
		if sc.State == client.StateReconnecting && sc.Err != nil {
			dropped = true
		}
		if dropped && sc.State == client.StateLive {
			break
		}
	}
	if n := warnings.n.Load(); n > 0 {
		t.Fatalf("%d warnings logged for a dropped connection, the last %q", n, warnings.last.Load())
	}
}

// warnCounter is a slog handler that counts the records at warning level
// and above.
type warnCounter struct {
	n    atomic.Int64
	last atomic.Value
}

func (w *warnCounter) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		w.n.Add(1)
		w.last.Store(r.Message)
	}
	return nil
}
func (w *warnCounter) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnCounter) WithGroup(string) slog.Handler      { return w }
