// Package memcluster is relays sharing one history in memory: a
// history.Cluster, and the fenced history.Store beside it, with what a NATS
// JetStream cluster gives relay/history/jetstream (leases that lapse,
// owner records, forwarded commands, the events each owner stores handed
// to the relays that follow them, record changes for the lists), held in
// one process. The relay's multi-relay logic is tested on it in every
// `go test`, without a nats-server; relay/history/clustertest checks that
// it and the JetStream cluster behave alike.
//
// A Net is what the relays share (the NATS cluster's part); each relay has
// its own Store (NewStore) and Cluster (NewCluster) on it, as each relay
// has its own connection, store and membership on NATS.
package memcluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// Net is the medium the relays of one test share: the history, the
// leases, the owner records, and the delivery of notices between the
// relays.
type Net struct {
	mem *history.Memory

	// mu guards everything below, and orders a write with what it
	// delivers: each Cluster's queue gets a conversation's appends in
	// the order they were stored. Lock order: Net.mu, then a Cluster's mu,
	// then a Store's mu.
	mu     sync.Mutex
	leases map[string]time.Time // relay id → when its lease lapses
	owners map[string]ownerRec  // conversation id → its owner record
	rev    uint64               // of the last owner record written
	// members is the relays answering commands, by id: announced, not
	// stopped, not cut off.
	members map[string]*Cluster
	// receivers is the started clusters, not stopped nor cut off: they
	// are told what is stored, deleted and lapsed.
	receivers map[*Cluster]bool
	// presence is the tokens with a connection open on each relay, by
	// relay id (history.Presence): it goes with the relay's lease.
	presence map[string]map[[sha256.Size]byte]bool
}

type ownerRec struct {
	relay string
	rev   uint64
}

// New returns an empty Net.
func New() *Net {
	return &Net{
		mem:       history.NewMemory(),
		leases:    map[string]time.Time{},
		owners:    map[string]ownerRec{},
		members:   map[string]*Cluster{},
		receivers: map[*Cluster]bool{},
		presence:  map[string]map[[sha256.Size]byte]bool{},
	}
}

// errCut is every request of a relay cut off from the Net (Cluster.Cut),
// as a closed NATS connection fails them.
var errCut = errors.New("memcluster: cut off (the connection is closed)")

// leaseHeldLocked reports whether relay's lease holds now.
func (n *Net) leaseHeldLocked(relay string, now time.Time) bool {
	at, ok := n.leases[relay]
	return ok && now.Before(at)
}

// expire removes the leases that lapsed and tells the other relays, as
// the NATS server removes a key whose TTL passed and its watchers hear
// of it. Every started cluster calls it on its ticks.
func (n *Net) expire(now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, at := range n.leases {
		if !now.Before(at) {
			delete(n.leases, id)
			delete(n.presence, id)
			n.goneLocked(id)
		}
	}
}

// goneLocked tells every receiver but relay itself that relay's lease is
// gone.
func (n *Net) goneLocked(relay string) {
	for c := range n.receivers {
		if c.ID() != relay {
			c.enqueue(delivery{kind: kindGone, id: relay})
		}
	}
}

// publishLocked hands an append of writer's to the relays: its events to
// those that follow the conversation, and, when a list would show
// something new, its record to every relay (tellChange in jetstream).
func (n *Net) publishLocked(writer *Store, id string, events []history.Event, rec history.Conversation, tell bool) {
	for c := range n.receivers {
		if c.follows[id] > 0 {
			c.enqueue(delivery{kind: kindLive, id: id, events: events, state: rec})
		}
	}
	if !tell {
		return
	}
	for c := range n.receivers {
		c.enqueue(delivery{kind: kindChanged, id: id, state: rec})
	}
}

// Store is one relay's history on a Net: the shared history, read as it
// is, with writes fenced as the JetStream store's appends are. A
// conversation's write is refused (history.ErrConflict, in a
// history.PartialWriteError) when another store appended to it since this
// store last wrote it or read it with Cluster.Latest. The devices and the
// spend ledger are the shared history's (history.Memory's).
type Store struct {
	*history.Memory
	net *Net

	mu     sync.Mutex // guards expect, told, cl, cut
	expect map[string]tail
	told   map[string]told
	cl     *Cluster // NewCluster's: the record changes are told once it started
	cut    bool
}

// tail is what a store expects a conversation to be at its next write.
type tail struct {
	exists bool
	seq    int64
}

// told is the record of a conversation last told to the lists, and when.
type told struct {
	rec history.Conversation
	at  time.Time
}

// NewStore returns a relay's store on n.
func (n *Net) NewStore() *Store {
	return &Store{Memory: n.mem, net: n, expect: map[string]tail{}, told: map[string]told{}}
}

// changeEvery bounds how stale the list's record of a streaming
// conversation is on a relay that does not follow it (jetstream's).
const changeEvery = 5 * time.Second

// Write stores the batch's conversations whose tail is as this store last
// saw it, and fails the others with history.ErrConflict.
func (s *Store) Write(ctx context.Context, b history.Batch) error {
	ids := batchConversations(b)
	n, unlock := s.lock()
	defer unlock()
	if s.cut {
		if len(ids) == 0 {
			return fmt.Errorf("memcluster: write: %w", errCut)
		}
		failed := map[string]error{}
		for _, id := range ids {
			failed[id] = errCut
		}
		return &history.PartialWriteError{Failed: failed}
	}
	failed := map[string]error{}
	for _, id := range ids {
		if err := s.cl.fault(OpAppend, id); err != nil {
			failed[id] = fmt.Errorf("memcluster: append to %q: %w", id, err)
			continue
		}
		want, known := s.expect[id]
		if !known {
			continue // as the JetStream store, it expects what is stored now
		}
		if now := s.tailNetLocked(ctx, id); now != want {
			failed[id] = fmt.Errorf("memcluster: conversation %q is at %+v, not %+v: %w", id, now, want, history.ErrConflict)
		}
	}
	sub := b
	if len(failed) > 0 {
		sub = history.Batch{}
		for _, e := range b.Events {
			if failed[e.ConversationID] == nil {
				sub.Events = append(sub.Events, e)
			}
		}
		for _, c := range b.Conversations {
			if failed[c.ID] == nil {
				sub.Conversations = append(sub.Conversations, c)
			}
		}
	}
	if err := n.mem.Write(ctx, sub); err != nil {
		return err
	}
	events := map[string][]history.Event{}
	for _, e := range sub.Events {
		events[e.ConversationID] = append(events[e.ConversationID], e)
	}
	publishes := s.cl != nil && s.cl.publishing()
	now := time.Now()
	for _, id := range ids {
		if failed[id] != nil {
			continue
		}
		rec, err := n.mem.Conversation(ctx, id)
		if err != nil {
			continue
		}
		s.expect[id] = tail{exists: true, seq: rec.LastSeq}
		tell := false
		if publishes {
			last, ok := s.told[id]
			tell = !ok || !sameListing(last.rec, rec) || (rec.Streaming && now.Sub(last.at) >= changeEvery)
			if tell {
				s.told[id] = told{rec: rec, at: now}
			}
		}
		n.publishLocked(s, id, events[id], rec, tell)
	}
	if len(failed) > 0 {
		return &history.PartialWriteError{Failed: failed}
	}
	return nil
}

// tailNetLocked is the conversation's tail as stored now. The caller holds
// the Net's mu, which every Store's Write holds while it checks the tails
// and stores.
func (s *Store) tailNetLocked(ctx context.Context, id string) tail {
	c, err := s.net.mem.Conversation(ctx, id)
	if err != nil {
		return tail{}
	}
	return tail{exists: true, seq: c.LastSeq}
}

// sameListing reports whether a list shows a and b alike.
func sameListing(a, b history.Conversation) bool {
	return a.Title == b.Title && a.Mode == b.Mode && a.Model == b.Model && a.Agent == b.Agent &&
		string(a.PendingInput) == string(b.PendingInput) && a.Streaming == b.Streaming && a.Workspace == b.Workspace
}

// batchConversations is every conversation a batch writes, once each, in
// the order they first appear.
func batchConversations(b history.Batch) []string {
	seen := map[string]bool{}
	var ids []string
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, c := range b.Conversations {
		add(c.ID)
	}
	for _, e := range b.Events {
		add(e.ConversationID)
	}
	return ids
}

// Delete removes a conversation from the shared history. Like the
// JetStream store's, it tells no other relay: Cluster.Deleted does.
func (s *Store) Delete(ctx context.Context, id string) error {
	n, unlock := s.lock()
	defer unlock()
	if s.cut {
		return fmt.Errorf("memcluster: delete %q: %w", id, errCut)
	}
	delete(s.expect, id)
	delete(s.told, id)
	return n.mem.Delete(ctx, id)
}

// lock takes the Net's lock and then the store's, the order of every path
// that holds both, for a request that reads or writes the shared history;
// unlock lets both go.
func (s *Store) lock() (n *Net, unlock func()) {
	n = s.net
	n.mu.Lock()
	s.mu.Lock()
	return n, func() {
		s.mu.Unlock()
		n.mu.Unlock()
	}
}

// Close releases nothing: the history is the Net's.
func (s *Store) Close() error { return nil }

// forget drops what the store knows of a conversation another relay
// deleted: its next write expects what is stored then.
func (s *Store) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.expect, id)
	delete(s.told, id)
}

// latest reads the conversation as stored now and makes it the store's
// expectation for its next write.
func (s *Store) latest(ctx context.Context, id string) (history.Conversation, error) {
	n, unlock := s.lock()
	defer unlock()
	if s.cut {
		return history.Conversation{}, fmt.Errorf("memcluster: read %q: %w", id, errCut)
	}
	if err := s.cl.fault(OpLatest, id); err != nil {
		return history.Conversation{}, fmt.Errorf("memcluster: read %q: %w", id, err)
	}
	delete(s.told, id) // its next append, if it takes it over, tells its record anew
	c, err := n.mem.Conversation(ctx, id)
	if errors.Is(err, history.ErrNotFound) {
		s.expect[id] = tail{}
		return history.Conversation{}, history.ErrNotFound
	}
	if err != nil {
		return history.Conversation{}, err
	}
	s.expect[id] = tail{exists: true, seq: c.LastSeq}
	return c, nil
}
