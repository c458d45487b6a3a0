// Package clustertest is the conformance suite of history.Cluster: what
// the relay relies on of the relays sharing a history, run against the
// in-memory cluster (relay/history/memcluster) in every `go test` and
// against the JetStream one (relay/history/jetstream), as historytest is
// for stores.
package clustertest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// Options are a member's: its lease, and how often it renews it (longer
// than the lease plays a relay that stalls).
type Options struct {
	Lease      time.Duration
	RenewEvery time.Duration
}

// NewMember starts nothing: it makes one relay's store and cluster on the
// shared history of the test (each call another relay on the same one),
// and releases them when the test ends.
type NewMember func(t *testing.T, opts Options) (history.Store, history.Cluster)

// Lease is the lease of a member that plays a stalled relay (it renews
// less often than the lease, RenewEvery): short, so that the others see it
// lapse soon.
const Lease = 2 * time.Second

// steadyLease is the lease of every other member unless a test sets its
// own: long enough that a member that renews never lapses on a busy
// machine. With 2 s, a CI run at a load average of 20 and more lapsed
// Fence's old owner before its append, which the fence was to refuse
// (ErrLeaseLost, not the ErrConflict the test checks).
const steadyLease = 15 * time.Second

// wait bounds every wait for something the cluster tells.
const wait = 30 * time.Second

// Run runs the suite, its tests in parallel; backend makes a new shared
// history for each test (or gives each test conversations of its own on
// one) and returns how to add a relay to it.
func Run(t *testing.T, backend func(t *testing.T) NewMember) {
	tests := []struct {
		name string
		fn   func(t *testing.T, m NewMember)
	}{
		{"Owners", testOwners},
		{"Forward", testForward},
		{"Follow", testFollow},
		{"Fence", testFence},
		{"Deleted", testDeleted},
		{"StopGivesUp", testStopGivesUp},
		{"LeaseLapses", testLeaseLapses},
		{"NoClaimAfterLapse", testNoClaimAfterLapse},
		{"OwnLeaseLost", testOwnLeaseLost},
		{"Presence", testPresence},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, backend(t))
		})
	}
}

// member is a started relay: its store, cluster and what it was told.
type member struct {
	store   history.Store
	cluster history.Cluster
	h       *hooks
}

func start(t *testing.T, m NewMember, opts Options) *member {
	t.Helper()
	if opts.Lease == 0 {
		opts.Lease = steadyLease
		if opts.RenewEvery > 0 {
			opts.Lease = Lease
		}
	}
	s, c := m(t, opts)
	h := newHooks()
	if err := c.Start(h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	if why := c.Health(); why != "" {
		t.Fatalf("a started cluster is not healthy: %s", why)
	}
	return &member{store: s, cluster: c, h: h}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// convID is a conversation id of its own for each test and name.
func convID(t *testing.T, name string) string {
	return strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()) + "-" + name
}

// write stores events from..to of conversation id through m, the record
// saying title and streaming.
func (m *member) write(ctx context.Context, id string, from, to int64, title string, streaming bool) error {
	var b history.Batch
	for seq := from; seq <= to; seq++ {
		frame, _ := json.Marshal(map[string]any{"type": "copilot:delta", "data": map[string]any{"conversationId": id, "seq": seq}})
		b.Events = append(b.Events, history.Event{ConversationID: id, Seq: seq, Type: "copilot:delta", Frame: frame})
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	b.Conversations = []history.Conversation{{ID: id, Title: title, Mode: "act", CreatedAt: now, UpdatedAt: now, LastSeq: to, Streaming: streaming}}
	return m.store.Write(ctx, b)
}

// testOwners: one owner per conversation; a claim of another relay's
// finds it; a released conversation is anyone's.
func testOwners(t *testing.T, nm NewMember) {
	a, b := start(t, nm, Options{}), start(t, nm, Options{})
	ctx := ctxT(t)
	if a.cluster.ID() == "" || a.cluster.ID() == b.cluster.ID() {
		t.Fatalf("ids %q and %q", a.cluster.ID(), b.cluster.ID())
	}
	id := convID(t, "x")
	if owner, live, err := b.cluster.Owner(ctx, id); err != nil || owner != "" || live {
		t.Fatalf("Owner of a new conversation: %q %v %v", owner, live, err)
	}
	if owner, prev, err := a.cluster.Claim(ctx, id); err != nil || owner != a.cluster.ID() || prev != "" {
		t.Fatalf("A's Claim: owner %q previous %q, %v", owner, prev, err)
	}
	if owner, prev, err := a.cluster.Claim(ctx, id); err != nil || owner != a.cluster.ID() || prev != "" {
		t.Fatalf("A's second Claim: owner %q previous %q, %v", owner, prev, err)
	}
	if owner, prev, err := b.cluster.Claim(ctx, id); err != nil || owner != a.cluster.ID() || prev != a.cluster.ID() {
		t.Fatalf("B's Claim of A's: owner %q previous %q, %v", owner, prev, err)
	}
	if owner, live, err := b.cluster.Owner(ctx, id); err != nil || owner != a.cluster.ID() || !live {
		t.Fatalf("Owner: %q %v %v, want A live", owner, live, err)
	}
	b.cluster.Release(ctx, id) // not B's: nothing changes
	if owner, _, err := b.cluster.Owner(ctx, id); err != nil || owner != a.cluster.ID() {
		t.Fatalf("after B's Release, Owner %q (%v), want A", owner, err)
	}
	a.cluster.Release(ctx, id)
	// A release reaches the other relays' reads in time, not at once: on
	// JetStream a replica may serve the owner record from before it for a
	// moment (seen on a 3-node cluster on a quiet machine), and B's Claim
	// then still names A. Until then B asks again; after it, B owns.
	deadline := time.Now().Add(10 * time.Second)
	for {
		owner, prev, err := b.cluster.Claim(ctx, id)
		if err == nil && owner == b.cluster.ID() && prev == "" {
			break
		}
		if err != nil || owner != a.cluster.ID() || time.Now().After(deadline) {
			t.Fatalf("B's Claim after A's Release: owner %q previous %q, %v", owner, prev, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testForward: a command reaches its relay's hook, and its answer comes
// back; a relay that does not exist cannot be reached.
func testForward(t *testing.T, nm NewMember) {
	a, b := start(t, nm, Options{}), start(t, nm, Options{})
	ctx := ctxT(t)
	reply, err := b.cluster.Forward(ctx, a.cluster.ID(), []byte("ping"))
	if err != nil || string(reply) != "answer to ping" {
		t.Fatalf("Forward: %q, %v", reply, err)
	}
	if got := a.h.commandsSeen(); fmt.Sprint(got) != "[ping]" {
		t.Fatalf("A's hook got %v", got)
	}
	if _, err := b.cluster.Forward(ctx, "no-such-relay", []byte("ping")); !errors.Is(err, history.ErrUnreachable) {
		t.Fatalf("Forward to no relay: %v, want ErrUnreachable", err)
	}
}

// testFollow: a relay following a conversation gets every append of
// another's, events in order with the record after them; one that does
// not follow it hears of list changes only, with no events.
func testFollow(t *testing.T, nm NewMember) {
	a, b := start(t, nm, Options{}), start(t, nm, Options{})
	ctx := ctxT(t)
	id := convID(t, "x")
	unfollow, err := b.cluster.Follow(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.cluster.Latest(ctx, id); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("Latest of a new conversation: %v, want ErrNotFound", err)
	}
	if err := a.write(ctx, id, 1, 3, "one", true); err != nil {
		t.Fatal(err)
	}
	if err := a.write(ctx, id, 4, 4, "one", true); err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for len(seqs) < 4 {
		s := b.h.nextStored(t, id)
		for _, e := range s.events {
			seqs = append(seqs, e.Seq)
		}
		if n := len(s.events); n > 0 && s.state.LastSeq != s.events[n-1].Seq {
			t.Fatalf("Stored events up to %d with a record at %d", s.events[n-1].Seq, s.state.LastSeq)
		}
	}
	if fmt.Sprint(seqs) != "[1 2 3 4]" {
		t.Fatalf("B got seqs %v", seqs)
	}
	unfollow()
	unfollow() // twice does nothing more

	// Not followed: a list change comes without events.
	if err := a.write(ctx, id, 5, 5, "two", false); err != nil {
		t.Fatal(err)
	}
	for {
		s := b.h.nextStored(t, id)
		if s.state.LastSeq < 5 {
			continue // a record change told before the unfollow
		}
		if len(s.events) > 0 || s.state.Title != "two" || s.state.Streaming {
			t.Fatalf("B, no longer following, got %d events, state %+v", len(s.events), s.state)
		}
		break
	}
	// A new conversation is a list change for every relay.
	other := convID(t, "other")
	if err := a.write(ctx, other, 1, 1, "other", false); err != nil {
		t.Fatal(err)
	}
	if s := b.h.nextStored(t, other); len(s.events) > 0 || s.state.Title != "other" || s.state.LastSeq != 1 {
		t.Fatalf("B got %d events, state %+v", len(s.events), s.state)
	}
}

// testFence: a store whose conversation another took over (Latest, then
// an append) is refused its next append, and may append again after its
// own Latest.
func testFence(t *testing.T, nm NewMember) {
	a, b := start(t, nm, Options{}), start(t, nm, Options{})
	ctx := ctxT(t)
	id := convID(t, "x")
	if err := a.write(ctx, id, 1, 2, "t", true); err != nil {
		t.Fatal(err)
	}
	st, err := b.cluster.Latest(ctx, id)
	if err != nil || st.LastSeq != 2 || !st.Streaming {
		t.Fatalf("B's Latest: %+v, %v", st, err)
	}
	if err := b.write(ctx, id, 3, 3, "t", false); err != nil {
		t.Fatal(err)
	}
	err = a.write(ctx, id, 3, 3, "t", true)
	var pw *history.PartialWriteError
	if !errors.Is(err, history.ErrConflict) || !errors.As(err, &pw) || pw.Failed[id] == nil {
		t.Fatalf("the old owner's append: %v, want ErrConflict in a PartialWriteError", err)
	}
	var stored []int64
	if err := a.store.Events(ctx, id, 0, func(e history.Event) error {
		stored = append(stored, e.Seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(stored) != "[1 2 3]" {
		t.Fatalf("stored %v", stored)
	}
	if st, err := a.cluster.Latest(ctx, id); err != nil || st.LastSeq != 3 || st.Streaming {
		t.Fatalf("A's Latest: %+v, %v", st, err)
	}
	if err := a.write(ctx, id, 4, 4, "t", false); err != nil {
		t.Fatalf("after Latest: %v", err)
	}
}

// testDeleted: a delete notice reaches the other relays.
func testDeleted(t *testing.T, nm NewMember) {
	a, b := start(t, nm, Options{}), start(t, nm, Options{})
	ctx := ctxT(t)
	id := convID(t, "x")
	a.cluster.Deleted(ctx, id)
	b.h.wait(t, "Deleted "+id)
}

// testStopGivesUp: a relay that stops gives its conversations up at once
// and the others hear that it is gone.
func testStopGivesUp(t *testing.T, nm NewMember) {
	a, b := start(t, nm, Options{}), start(t, nm, Options{})
	ctx := ctxT(t)
	id := convID(t, "x")
	if owner, _, err := a.cluster.Claim(ctx, id); err != nil || owner != a.cluster.ID() {
		t.Fatalf("Claim: %q, %v", owner, err)
	}
	aID := a.cluster.ID()
	if err := a.cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if a.cluster.Health() == "" {
		t.Fatal("a stopped cluster is healthy")
	}
	b.h.wait(t, "RelayGone "+aID)
	if owner, prev, err := b.cluster.Claim(ctx, id); err != nil || owner != b.cluster.ID() || prev != "" {
		t.Fatalf("B's Claim after A stopped: owner %q previous %q, %v", owner, prev, err)
	}
	if _, err := b.cluster.Forward(ctx, aID, []byte("ping")); !errors.Is(err, history.ErrUnreachable) {
		t.Fatalf("Forward to a stopped relay: %v, want ErrUnreachable", err)
	}
}

// testLeaseLapses: a relay that stops renewing its lease is gone for the
// others after the lease: they hear RelayGone, and a claim takes its
// conversations over, naming it.
func testLeaseLapses(t *testing.T, nm NewMember) {
	a := start(t, nm, Options{RenewEvery: time.Hour})
	b := start(t, nm, Options{})
	ctx := ctxT(t)
	id := convID(t, "x")
	if owner, _, err := a.cluster.Claim(ctx, id); err != nil || owner != a.cluster.ID() {
		t.Fatalf("Claim: %q, %v", owner, err)
	}
	b.h.wait(t, "RelayGone "+a.cluster.ID())
	if owner, live, err := b.cluster.Owner(ctx, id); err != nil || owner != a.cluster.ID() || live {
		t.Fatalf("Owner: %q live %v (%v), want A not live", owner, live, err)
	}
	if owner, prev, err := b.cluster.Claim(ctx, id); err != nil || owner != b.cluster.ID() || prev != a.cluster.ID() {
		t.Fatalf("B's Claim: owner %q previous %q, %v", owner, prev, err)
	}
}

// testNoClaimAfterLapse: a relay whose lease lapsed before it noticed (it
// renews too late: as it last saw its lease, it holds) claims nothing. Its
// lease must hold when the claim is made, not only when it was checked
// just before: claimed under a lapsed lease, the conversation is anyone's
// at once, another relay claims and writes it, and the first, believing
// it owns it (an owner follows nothing), serves a history cut where it
// last wrote.
func testNoClaimAfterLapse(t *testing.T, nm NewMember) {
	a := start(t, nm, Options{RenewEvery: time.Hour})
	b := start(t, nm, Options{})
	ctx := ctxT(t)
	id := convID(t, "x")
	b.h.wait(t, "RelayGone "+a.cluster.ID()) // lapsed, as the others see it
	if owner, _, err := a.cluster.Claim(ctx, id); !errors.Is(err, history.ErrNoLease) {
		t.Fatalf("A's claim after its lease lapsed: owner %q, %v; want history.ErrNoLease", owner, err)
	}
	if owner, prev, err := b.cluster.Claim(ctx, id); err != nil || owner != b.cluster.ID() || prev != "" {
		t.Fatalf("B's claim after A's refused one: owner %q previous %q, %v; want B, no previous owner", owner, prev, err)
	}
}

// testOwnLeaseLost: a relay that renews too late hears LeaseLost, and
// comes back under another id, its old one gone.
func testOwnLeaseLost(t *testing.T, nm NewMember) {
	a := start(t, nm, Options{Lease: time.Second, RenewEvery: 1500 * time.Millisecond})
	first := a.cluster.ID()
	a.h.wait(t, "LeaseLost")
	a.h.wait(t, "RelayGone "+first)
	if a.cluster.ID() == first {
		t.Fatalf("still %s after its lease lapsed", first)
	}
}

// testPresence: the tokens a relay says are connected to it are present
// for the others, not for itself, until it says otherwise, stops, or its
// lease lapses (history.Presence).
func testPresence(t *testing.T, nm NewMember) {
	a, b := start(t, nm, Options{}), start(t, nm, Options{})
	stall := start(t, nm, Options{RenewEvery: time.Hour})
	pa, ok := a.cluster.(history.Presence)
	if !ok {
		t.Skip("this cluster shares no presence")
	}
	pb, pstall := b.cluster.(history.Presence), stall.cluster.(history.Presence)
	pixel, laptop, phone := sha256.Sum256([]byte("pixel")), sha256.Sum256([]byte("laptop")), sha256.Sum256([]byte("phone"))
	// eventually waits until p's Present is want.
	eventually := func(who string, p history.Presence, want ...[sha256.Size]byte) {
		t.Helper()
		deadline := time.Now().Add(wait)
		for {
			got := p.Present()
			same := len(got) == len(want)
			for _, w := range want {
				same = same && got[w]
			}
			if same {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: Present has %d tokens, want %d", who, len(got), len(want))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	pa.SetPresent([][sha256.Size]byte{pixel, laptop})
	pstall.SetPresent([][sha256.Size]byte{phone})
	eventually("B, once A and the stalled relay told", pb, pixel, laptop, phone)
	eventually("A (its own connections are not the others')", pa, phone)
	pa.SetPresent([][sha256.Size]byte{laptop})
	eventually("B, once A's Pixel left", pb, laptop, phone)
	// The stalled relay's lease lapses, and its connections go with it.
	b.h.wait(t, "RelayGone "+stall.cluster.ID())
	eventually("B, once the stalled relay's lease lapsed", pb, laptop)
	ctx := ctxT(t)
	if err := a.cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	eventually("B, once A stopped", pb)
	pa.SetPresent([][sha256.Size]byte{pixel}) // a stopped relay tells nobody
	time.Sleep(100 * time.Millisecond)
	eventually("B, after a stopped relay's SetPresent", pb)
}

// hooks records what a cluster tells its relay.
type hooks struct {
	mu       sync.Mutex
	commands []string
	notes    chan string // "Deleted id", "RelayGone id", "LeaseLost", "Reconnected"
	stored   chan stored
}

type stored struct {
	id     string
	events []history.Event
	state  history.Conversation
}

func newHooks() *hooks {
	return &hooks{notes: make(chan string, 1024), stored: make(chan stored, 1024)}
}

func (h *hooks) Command(ctx context.Context, cmd []byte) []byte {
	h.mu.Lock()
	h.commands = append(h.commands, string(cmd))
	h.mu.Unlock()
	return append([]byte("answer to "), cmd...)
}

func (h *hooks) commandsSeen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.commands...)
}

func (h *hooks) Stored(id string, events []history.Event, state history.Conversation) {
	select {
	case h.stored <- stored{id: id, events: append([]history.Event(nil), events...), state: state}:
	default: // nobody reads them (a relay's own changes): never held up
	}
}

func (h *hooks) note(s string) {
	select {
	case h.notes <- s:
	default:
	}
}

func (h *hooks) Deleted(id string)        { h.note("Deleted " + id) }
func (h *hooks) RelayGone(relayID string) { h.note("RelayGone " + relayID) }
func (h *hooks) Reconnected()             { h.note("Reconnected") }
func (h *hooks) LeaseLost(bool)           { h.note("LeaseLost") }

// wait waits for note, skipping others.
func (h *hooks) wait(t *testing.T, note string) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case n := <-h.notes:
			if n == note {
				return
			}
		case <-deadline:
			t.Fatalf("not told %q within %v", note, wait)
		}
	}
}

// nextStored is the next Stored of conversation id, skipping others'.
func (h *hooks) nextStored(t *testing.T, id string) stored {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case s := <-h.stored:
			if s.id == id {
				return s
			}
		case <-deadline:
			t.Fatalf("no Stored of %s within %v", id, wait)
		}
	}
}
