package jetstream

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// TestClusterLivePendingBounded hands onLive (deliver's handler) messages
// that start appends whose last message (the one with the record) never
// comes: a batch cut by a dropped message or a reconnect, or a hostile publisher on
// the live subjects. What it keeps of them must stay bounded, however many
// conversations and messages there are: the relay reads any events it
// drops from the store when it sees the gap.
func TestClusterLivePendingBounded(t *testing.T) {
	t.Parallel()
	c := liveOnlyCluster()
	msg := func(tok string, seq int) *nats.Msg {
		m := &nats.Msg{Subject: c.liveSubject(tok), Header: nats.Header{}, Data: []byte(`{}`)}
		m.Header.Set(hdrEvent, fmt.Sprintf("%d %d 1 assistant", seq, seq))
		return m
	}
	// Many conversations, one unfinished append each.
	for i := range 4 * maxPendingConvs {
		c.onLive(msg(fmt.Sprintf("c%d", i), 1))
	}
	if n := len(c.pending); n > maxPendingConvs {
		t.Fatalf("%d conversations' unfinished appends kept, want at most %d", n, maxPendingConvs)
	}
	// One conversation, an append that never ends.
	for seq := 1; seq <= 4*maxPendingEvents; seq++ {
		c.onLive(msg("one", seq))
	}
	if n := len(c.pending["one"]); n > maxPendingEvents {
		t.Fatalf("%d events of one unfinished append kept, want at most %d", n, maxPendingEvents)
	}
}

// TestClusterLiveRecordsBounded: the records onLive keeps to decode each
// conversation's next one against stay bounded, however many
// conversations it follows, and a deleted conversation's goes.
func TestClusterLiveRecordsBounded(t *testing.T) {
	t.Parallel()
	c := liveOnlyCluster()
	for i := range 3 * maxRecordMemos {
		tok := fmt.Sprintf("c%d", i)
		m := &nats.Msg{Subject: c.liveSubject(tok), Header: nats.Header{}, Data: []byte(`{}`)}
		m.Header.Set(hdrEvent, "1 1 1 assistant")
		m.Header.Set(hdrConv, fmt.Sprintf(`{"id":%q,"lastSeq":1,"msgs":1,"max":1,"append":"a:1"}`, tok))
		c.onLive(m)
		if c.records[tok] == nil {
			t.Fatalf("conversation %s's record not kept", tok)
		}
	}
	if n := len(c.records); n > maxRecordMemos {
		t.Fatalf("%d conversations' records kept, want at most %d", n, maxRecordMemos)
	}
	tok := fmt.Sprintf("c%d", 3*maxRecordMemos-1)
	c.s = &Store{} // what deletedRemote forgets of the conversation there: nothing
	c.deletedRemote(quietHooks{}, tok, tok)
	if c.records[tok] != nil {
		t.Errorf("a deleted conversation's record kept")
	}
}

// TestDeliverHandlesNothingOnceStopped: once Stop has ended deliver's
// context, the messages still queued run no hook, however often select
// would pick them over the context's end.
func TestDeliverHandlesNothingOnceStopped(t *testing.T) {
	t.Parallel()
	c := liveOnlyCluster()
	c.f.msgs = make(chan *nats.Msg, 100)
	for i := range cap(c.f.msgs) {
		m := &nats.Msg{Subject: c.liveSubject(fmt.Sprintf("c%d", i)), Header: nats.Header{}, Data: []byte(`{}`)}
		m.Header.Set(hdrEvent, "1 1 1 assistant")
		c.f.msgs <- m
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.deliver(ctx)
	if n := c.liveMsgs.Load(); n != 0 {
		t.Fatalf("deliver handled %d messages after its context ended", n)
	}
}

// liveOnlyCluster is a Cluster with what its live delivery needs and no
// connection: the tests hand its handler messages themselves.
func liveOnlyCluster() *Cluster {
	return &Cluster{
		base:    "pilotdesk",
		log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		pending: map[string][]history.Event{},
		records: map[string]*recordMemo{},
		hooks:   quietHooks{},
	}
}
