package relay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// A token creates at most MaxNewConversations conversations a minute,
// by copilot:send, copilot:set_mode or copilot:close on an id the relay
// does not have; more get error limit and make nothing. Going on with a
// conversation that exists is not limited; another connection of the same
// token is.
func TestNewConversationLimit(t *testing.T) {
	e := start(t, func(c *relay.Config) { c.MaxNewConversations = 3 })
	cl := e.dial()
	for _, id := range []string{"n1", "n2"} {
		cl.Send("copilot:set_mode", map[string]any{"conversationId": id, "mode": "plan"})
	}
	cl.Send("copilot:close", map[string]any{"conversationId": "n3"})
	expectQuiet(t, cl)
	over := []struct{ typ, id string }{
		{"copilot:set_mode", "n4"}, {"copilot:send", "n5"}, {"copilot:close", "n6"},
	}
	for _, o := range over {
		data := map[string]any{"conversationId": o.id, "mode": "act", "prompt": "hi"}
		cl.Send(o.typ, data)
		f := cl.Expect("error")
		m := dataMap(t, f)
		if m["code"] != protocol.CodeLimit || m["type"] != o.typ || m["conversationId"] != o.id || !strings.Contains(m["message"].(string), "3 conversations") {
			t.Errorf("%s of a new conversation over the limit: %s", o.typ, f.Raw)
		}
	}
	if n := len(e.agent.openCalls()); n != 0 {
		t.Errorf("a refused send reached the agent")
	}
	// Existing conversations go on.
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "n1"})
	cl.Expect("copilot:subscribed")
	cl.Send("copilot:set_mode", map[string]any{"conversationId": "n1", "mode": "act"})
	cl.WaitFor("copilot:mode_changed", func(f relaytest.Frame) bool { return f.Field("conversationId") == "n1" && f.Field("mode") == "act" })
	// Another connection of the same token shares the allowance
	// (TestNewConversationsPerToken: another token has its own).
	other := e.dial()
	other.Send("copilot:set_mode", map[string]any{"conversationId": "o1", "mode": "plan"})
	if f := other.Expect("error"); dataMap(t, f)["code"] != protocol.CodeLimit {
		t.Fatalf("a new conversation from another connection of the token: %s", f.Raw)
	}
	// A conversation is listed once its first event is stored, which the
	// committer does after set_mode has been answered: ask until it is.
	deadline := time.Now().Add(wait)
	for {
		other.Send("copilot:list", nil)
		convs := other.Expect("copilot:conversations").Field("conversations").([]any)
		if len(convs) == 3 {
			break
		}
		if len(convs) > 3 || time.Now().After(deadline) {
			t.Fatalf("listed %d conversations, want n1, n2 and n3", len(convs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// unfinishedFrame starts a text message of size bytes, a ping padded with
// spaces, and sends all of it but the last byte; finish sends that byte.
func unfinishedFrame(t *testing.T, cl *relaytest.Client, size int) (finish func()) {
	t.Helper()
	// The writer keeps its context for the writes to come.
	w, err := cl.Conn.Writer(context.Background(), websocket.MessageText)
	if err != nil {
		t.Fatal(err)
	}
	msg := append([]byte(`{"type":"ping"}`), bytes.Repeat([]byte(" "), size-len(`{"type":"ping"}`))...)
	if _, err := w.Write(msg[:size-1]); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if _, err := w.Write(msg[size-1:]); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// The frames being received share a budget (MaxPendingFrameBytes): while
// one connection holds most of it with a frame it does not finish, a large
// frame of another is dropped with error limit, and the connection goes on;
// once the first finishes, the budget is free again. Small frames need
// none of it.
func TestPendingFrameBudget(t *testing.T) {
	e := start(t, func(c *relay.Config) { c.MaxPendingFrameBytes = 1 << 20 })
	big := append([]byte(`{"type":"ping"}`), bytes.Repeat([]byte(" "), 500<<10)...)
	holder := e.dial()
	finish := unfinishedFrame(t, holder, 900<<10)
	waitPending(t, e, 1<<20-16<<10) // the relay reads it (1 MiB of buffer, 1,008 KiB of the budget)
	other := e.dial()
	other.SendRaw(big)
	if f := other.Next(); f.Type != "error" || dataMap(t, f)["code"] != protocol.CodeLimit || !strings.Contains(dataMap(t, f)["message"].(string), "send it again") {
		t.Fatalf("a 500 KiB frame while another connection holds 900 KiB of a 1 MiB budget: %s", f.Raw)
	}
	other.Send("ping", nil) // a small frame needs no budget
	other.Expect("pong")
	finish()
	if f := holder.Next(); f.Type != "pong" {
		t.Fatalf("the holder's frame, once finished: %s", f.Raw)
	}
	// Once the frame was handled, the budget is free again. The holder's
	// pong is queued while its frame is handled, before the relay gives
	// the frame's share back (readLoop releases it after), so a frame
	// sent on that pong can still find the budget taken: it is sent again
	// until it is read.
	deadline := time.Now().Add(wait)
	for {
		other.SendRaw(big)
		f := other.Next()
		if f.Type == "pong" {
			return
		}
		if f.Type != "error" || dataMap(t, f)["code"] != protocol.CodeLimit || time.Now().After(deadline) {
			t.Fatalf("a 500 KiB frame after the holder's frame was handled: %s", f.Raw)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var seqField = regexp.MustCompile(`"seq":(\d+)`)

// countStore counts the bytes of the events its Events hands out.
type countStore struct {
	history.Store
	read atomic.Int64
}

func (s *countStore) Events(ctx context.Context, id string, since int64, fn func(history.Event) error) error {
	return s.Store.Events(ctx, id, since, func(e history.Event) error {
		s.read.Add(int64(len(e.Frame)))
		return fn(e)
	})
}

// flakyStore's Events fails its first fails calls, as a JetStream store
// does while its cluster elects a leader, after handing out up to one
// event.
type flakyStore struct {
	history.Store
	fails atomic.Int32
}

func (s *flakyStore) Events(ctx context.Context, id string, since int64, fn func(history.Event) error) error {
	if s.fails.Add(-1) < 0 {
		return s.Store.Events(ctx, id, since, fn)
	}
	sent := false
	err := s.Store.Events(ctx, id, since, func(e history.Event) error {
		if sent {
			return errors.New("nats: API error: code=503 err_code=10008 description=JetStream system temporarily unavailable")
		}
		sent = true
		return fn(e)
	})
	if !sent && err == nil {
		err = errors.New("nats: API error: code=503 err_code=10008 description=JetStream system temporarily unavailable")
	}
	return err
}

// A replay whose reads of the history fail for a moment (a store whose
// cluster is electing a leader) reads again from the last event it sent,
// and the client gets the whole history once, in order, where the first
// failure closed its connection.
func TestReplayReadsAgainAfterAFailure(t *testing.T) {
	parallel(t)
	st := &flakyStore{Store: history.NewMemory()}
	e := start(t, func(c *relay.Config) { c.Store = st })
	cl, _ := e.subscribe("c")
	ft := e.startTurn(cl, "c", "go", nil)
	for i := range 10 {
		ft.delta("m", fmt.Sprint(i))
	}
	ft.finish(nil)
	last := cl.WaitFor("copilot:idle", nil).Seq()

	st.fails.Store(3)
	late := e.dial()
	late.Send("copilot:subscribe", map[string]any{"conversationId": "c", "sinceSeq": 0})
	sub, replay := late.WaitForCollect("copilot:subscribed", nil)
	var seqs []int64
	for _, f := range replay {
		seqs = append(seqs, f.Seq())
	}
	if len(seqs) != int(last) || seqs[0] != 1 || seqs[len(seqs)-1] != last || sub.Field("seq") != float64(last) {
		t.Fatalf("replay after three failed reads: seqs %v, subscribed %s; want 1..%d once each", seqs, sub.Raw, last)
	}
	for i := range seqs {
		if seqs[i] != int64(i+1) {
			t.Fatalf("replay after three failed reads: seqs %v", seqs)
		}
	}
}

// A replay reads the history as the socket drains: a client that subscribes
// from seq 0 to 24 MiB of history and does not read makes the relay read
// only what the socket buffers and a small window hold (about 4 MiB), not
// the whole history into its send queue (up to 64 MiB); when the client
// reads, it gets every event in order.
func TestReplayFollowsTheSocket(t *testing.T) {
	parallel(t)
	st := &countStore{Store: history.NewMemory()}
	e := start(t, func(c *relay.Config) { c.Store = st })
	cl, _ := e.subscribe("long")
	ft := e.startTurn(cl, "long", "go", nil)
	chunk := strings.Repeat("z", 64<<10)
	const n = 384 // 24 MiB
	for range n {
		ft.delta("m", chunk)
	}
	ft.finish(nil)
	cl.WaitFor("copilot:idle", nil)
	cl.Close()

	conn, err := relaytest.DialConn(e.srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	ctx, cancel := context.WithTimeout(context.Background(), 6*wait) // 24 MiB, with -race, on a busy machine
	defer cancel()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"copilot:subscribe","data":{"conversationId":"long","sinceSeq":0}}`)); err != nil {
		t.Fatal(err)
	}
	// Wait until the relay stops reading the history.
	var read int64
	for stable := 0; stable < 5; {
		time.Sleep(100 * time.Millisecond)
		if now := st.read.Load(); now == read {
			stable++
		} else {
			read, stable = now, 0
		}
	}
	t.Logf("the relay read %.1f MiB of the 24 MiB history for a client that does not read", float64(read)/(1<<20))
	if read > 12<<20 {
		t.Errorf("the relay read %.1f MiB of history for a client that reads nothing: the replay does not follow the socket", float64(read)/(1<<20))
	}
	// Now the client reads: everything comes, in order.
	var seq int64
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("read after seq %d: %v", seq, err)
		}
		// The type and seq come first in a frame: reading them there
		// spares decoding 24 MiB of JSON.
		head := data[:min(len(data), 200)]
		if bytes.HasPrefix(head, []byte(`{"type":"copilot:subscribed"`)) {
			break
		}
		m := seqField.FindSubmatch(head)
		if m == nil {
			t.Fatalf("a frame without a seq: %.200s", data)
		}
		got, _ := strconv.ParseInt(string(m[1]), 10, 64)
		if got != seq+1 {
			t.Fatalf("seq %d after %d", got, seq)
		}
		seq = got
	}
	if seq != n+2 { // the user message, the deltas, the idle
		t.Fatalf("replayed up to seq %d, want %d", seq, n+2)
	}
}
