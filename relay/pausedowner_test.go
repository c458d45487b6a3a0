package relay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// gatedStore is a relay's store whose next write of one conversation's
// events can be held: held is closed when that write arrives, and it waits
// until release is closed; its outcome is sent on result.
type gatedStore struct {
	*jetstream.Store
	mu      sync.Mutex
	id      string // "": nothing is held
	held    chan struct{}
	release chan struct{}
	result  chan writeResult
}

// writeResult is a held write's outcome, read before the relay's committer
// handles (and changes) the error.
type writeResult struct {
	leaseLost bool
	err       string
}

// arm holds the next write of conversation id.
func (g *gatedStore) arm(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.id = id
	g.held, g.release, g.result = make(chan struct{}), make(chan struct{}), make(chan writeResult, 1)
}

func (g *gatedStore) Write(ctx context.Context, b history.Batch) error {
	g.mu.Lock()
	hold := false
	for _, e := range b.Events {
		if g.id != "" && e.ConversationID == g.id {
			hold = true
			break
		}
	}
	held, release, result := g.held, g.release, g.result
	if hold {
		g.id = "" // once
	}
	g.mu.Unlock()
	if !hold {
		return g.Store.Write(ctx, b)
	}
	close(held)
	<-release
	err := g.Store.Write(ctx, b)
	res := writeResult{leaseLost: errors.Is(err, history.ErrLeaseLost)}
	if err != nil {
		res.err = err.Error()
	}
	result <- res
	return err
}

// A relay paused past its lease (a SIGSTOP, played here by holding its
// lease renewals and its next write) writes nothing it had queued when it
// resumes: it learns that it lost its conversations instead. Relay B, whose
// client watches, has meanwhile read the stream to take the conversation
// over and queued the turn's closing idle: that idle is stored, and says
// that the relay was lost. Before, A's queued delta was stored after B's
// read, B's idle was refused, and B closed the turn again as "the history
// store could not be reached", which it never was.
//
// lateWrite: A's delta lands all the same (as it could if A was paused
// between its last look at its lease and its append): B's idle is refused,
// and B, taking the conversation back, closes the turn as left by A.
func TestClusterPausedOwnerWritesNothing(t *testing.T) {
	parallel(t)
	for _, lateWrite := range []bool{false, true} {
		t.Run(map[bool]string{false: "resumes", true: "lateWrite"}[lateWrite], func(t *testing.T) {
			pausedOwner(t, lateWrite)
		})
	}
}

func pausedOwner(t *testing.T, lateWrite bool) {
	checkNoLeaks(t)
	b := embeddedBackend(t)
	s := clusterScript(t)
	const id = "paused-owner"
	var paused sync.Mutex // held by the test: A's renewals wait
	pause := make(chan struct{})
	aStore := &gatedStore{}
	a := b.relayMod(t, 0, script.New(s), jetstream.ClusterOptions{Lease: testLease, BeforeRenew: func(ctx context.Context) error {
		paused.Lock()
		held := pause
		paused.Unlock()
		select {
		case <-held:
			<-ctx.Done() // paused until the relay stops
			return ctx.Err()
		default:
			return nil
		}
	}}, func(cfg *relay.Config) {
		aStore.Store = cfg.Store.(*jetstream.Store)
		cfg.Store = aStore
	})
	bStore := &gatedStore{}
	bb := b.relayMod(t, 1, script.New(s), jetstream.ClusterOptions{Lease: testLease}, func(cfg *relay.Config) {
		bStore.Store = cfg.Store.(*jetstream.Store)
		cfg.Store = bStore
	})
	first := a.cluster.ID()
	ca, cb := a.srv.Dial(t), bb.srv.Dial(t)

	send(ca, id, "long")
	ca.WaitFor("copilot:delta", nil)
	replayFrom(cb, id, 0)
	cb.WaitFor("copilot:delta", nil)

	// A is paused: no more renewals, and its next write waits.
	aStore.arm(id)
	bStore.arm(id)
	paused.Lock()
	close(pause)
	paused.Unlock()
	<-aStore.held
	// A's lease lapses; B takes the conversation over and its closing
	// idle waits to be written.
	<-bStore.held
	ctx, cancel := context.WithTimeout(context.Background(), 10*wait)
	defer cancel()
	late := int64(0)
	if lateWrite {
		late = writeBehind(ctx, t, b, id)
	}
	// A resumes before B writes.
	close(aStore.release)
	if res := <-aStore.result; !res.leaseLost {
		t.Errorf("A's write after its lease lapsed returned %q, want history.ErrLeaseLost", res.err)
	}
	close(bStore.release)
	if res := <-bStore.result; (res.err != "") != lateWrite {
		t.Errorf("B's closing write: %q", res.err)
	}

	idle, before := cb.WaitForCollect("copilot:idle", nil)
	msg := fmt.Sprint(idle.Field("message"))
	if idle.Field("status") != "error" || !strings.HasPrefix(msg, "relay lost") || !strings.Contains(msg, first) {
		t.Fatalf("B's client got %s, want the turn closed as relay %s lost", idle.Raw, first)
	}
	if lateWrite && (len(before) == 0 || before[len(before)-1].Seq() != late) {
		t.Fatalf("B's client did not get the late delta %d before the idle: %s", late, framesString(before))
	}
	a.logs.waitLog(t, "lease lapsed")
	// A's client gets the same idle, from B through the stream.
	if idleA, _ := ca.WaitForCollect("copilot:idle", nil); idleA.Seq() != idle.Seq() || idleA.Field("message") != idle.Field("message") {
		t.Fatalf("A's client got %s, B's %s", idleA.Raw, idle.Raw)
	}

	// The stored chain: gapless, its one idle B's, last.
	var types []string
	if err := bb.store.Events(ctx, id, 0, func(e history.Event) error {
		if e.Seq != int64(len(types)+1) {
			return fmt.Errorf("seq %d after %d events", e.Seq, len(types))
		}
		types = append(types, e.Type)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(types) != int(idle.Seq()) || types[len(types)-1] != "copilot:idle" || countIn(types, "copilot:idle") != 1 {
		t.Fatalf("stored %v, B's idle at seq %d", types, idle.Seq())
	}
}

// writeBehind appends a delta to conversation id through a store of no
// relay, as a relay that lost it might have, and returns its seq.
func writeBehind(ctx context.Context, t *testing.T, b testBackend, id string) int64 {
	t.Helper()
	st := b.quietStore(t, 2)
	conv, err := st.Conversation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	conv.LastSeq++
	d := protocol.Delta{Header: protocol.Header{ConversationID: id, Seq: conv.LastSeq}, MessageID: "late", Content: "late "}
	frame, err := protocol.Encode(protocol.TypeDelta, &d)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(ctx, history.Batch{Events: []history.Event{{ConversationID: id, Seq: conv.LastSeq, Type: protocol.TypeDelta, Frame: frame}}, Conversations: []history.Conversation{conv}}); err != nil {
		t.Fatal(err)
	}
	return conv.LastSeq
}
