package memcluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// Cluster is one relay's membership of a Net: history.Cluster as
// relay/history/jetstream's Cluster behaves, its lease, owner records,
// forwarded commands and deliveries kept by the Net.
type Cluster struct {
	net     *Net
	s       *Store
	faultFn func(op, conversationID string) error // Options.Fault
	lease   time.Duration
	every   time.Duration // between renewals
	log     *slog.Logger

	mu sync.Mutex // guards the fields below it
	// id is new at every announcement, as jetstream's.
	id       string
	hooks    history.ClusterHooks
	leaseOK  bool      // the lease holds, as this relay last saw it
	renewed  time.Time // the last successful announcement or renewal
	claimed  map[string]uint64
	started  bool
	stopped  bool
	cut      bool
	ctx      context.Context // Start's, ended by Stop
	cancel   context.CancelFunc
	workers  sync.WaitGroup // the ticker, the delivery, forwarded commands running
	queue    chan delivery  // what the Net delivers, in order
	dropped  atomic.Int64   // deliveries dropped on a full queue
	liveMsgs atomic.Uint64
	publish  atomic.Bool    // started and not stopped: its store tells record changes
	lapses   history.Lapses // what a Forward waits on besides the answer

	// follows counts the Follows of each conversation. Guarded by the
	// Net's mu: a write delivers to the relays following then.
	follows map[string]int
}

// Options tune a Cluster, as jetstream.ClusterOptions do.
type Options struct {
	// Lease is how long a relay may go unheard before the others take its
	// conversations over; default 15 s.
	Lease time.Duration
	// RenewEvery is how often the lease is renewed; default Lease/5. (A
	// test makes it longer than the lease to play a relay that stalls.)
	RenewEvery time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Fault, if set, is asked before each request of the relay's that may
	// fail (fault.go: OpAppend, OpClaim, OpLatest) and fails it with the
	// error it returns: a test plays a store that does not answer, or an
	// append refused by a stream leader cut off and healed
	// (history.ErrConflict while the stream holds what the relay
	// expected). It runs with the Net locked: it must not call back into
	// the Net.
	Fault func(op, conversationID string) error
}

// queueLen is how many deliveries may wait for a relay; past it they are
// dropped, and the relay catches up from the store (Reconnected).
const queueLen = 1 << 14

// NewCluster returns the membership of the relay whose store is s. It
// starts nothing: the relay calls Start.
func (n *Net) NewCluster(s *Store, opts Options) *Cluster {
	if opts.Lease <= 0 {
		opts.Lease = 15 * time.Second
	}
	if opts.RenewEvery <= 0 {
		opts.RenewEvery = opts.Lease / 5
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Cluster{
		net: n, s: s, faultFn: opts.Fault, lease: opts.Lease, every: opts.RenewEvery, log: opts.Logger,
		id: randomHex(), claimed: map[string]uint64{}, follows: map[string]int{},
		queue: make(chan delivery, queueLen),
	}
	s.mu.Lock()
	s.cl = c
	s.mu.Unlock()
	return c
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// delivery is one thing the Net tells a relay.
type delivery struct {
	kind   int
	id     string // the conversation's, or the relay's (kindGone)
	events []history.Event
	state  history.Conversation
}

const (
	kindLive        = iota // an append of a followed conversation
	kindChanged            // a record a list would show anew
	kindDeleted            // a conversation deleted
	kindGone               // a relay's lease lapsed
	kindReconnected        // what was told may not all have come
)

// enqueue hands d to the delivery goroutine; a full queue drops it and
// counts it.
func (c *Cluster) enqueue(d delivery) {
	select {
	case c.queue <- d:
	default:
		c.dropped.Add(1)
	}
}

func (c *Cluster) publishing() bool { return c.publish.Load() }

// ID is this relay's, as it last announced itself.
func (c *Cluster) ID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

// Start announces the relay and delivers to h until Stop.
func (c *Cluster) Start(h history.ClusterHooks) error {
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	if c.started || c.stopped {
		c.mu.Unlock()
		cancel()
		return errors.New("memcluster: started twice")
	}
	c.started, c.hooks, c.ctx, c.cancel = true, h, ctx, cancel
	c.mu.Unlock()
	if err := c.register(false); err != nil {
		cancel()
		return err
	}
	c.net.mu.Lock()
	c.net.receivers[c] = true
	c.net.mu.Unlock()
	c.publish.Store(true)
	c.workers.Go(func() { c.deliver(ctx, h) })
	c.workers.Go(func() { c.tick(ctx, h) })
	c.log.Info("memcluster: relay announced", "relay", c.ID(), "lease", c.lease)
	h.Reconnected()
	return nil
}

// register announces the relay: its lease, and its commands. again: it
// comes back after its lease lapsed, under a new id.
func (c *Cluster) register(again bool) error {
	n := c.net
	n.mu.Lock()
	defer n.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return fmt.Errorf("memcluster: announce relay %s: %w", c.id, errCut)
	}
	if c.stopped {
		return errors.New("memcluster: stopped")
	}
	if again {
		delete(n.members, c.id)
		old := c.id
		c.id = randomHex()
		if set, ok := n.presence[old]; ok {
			// Its connections are open still: they are the new id's.
			delete(n.presence, old)
			n.presence[c.id] = set
		}
	}
	now := time.Now()
	n.leases[c.id] = now.Add(c.lease)
	n.members[c.id] = c
	c.leaseOK, c.renewed = true, now
	return nil
}

// tick renews the lease, lapses the Net's leases whose time passed, and
// tells the relay when deliveries were dropped.
func (c *Cluster) tick(ctx context.Context, h history.ClusterHooks) {
	t := time.NewTicker(max(min(c.every, c.lease/10, time.Second), 5*time.Millisecond))
	defer t.Stop()
	last := time.Now()
	var dropped int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.net.expire(time.Now())
		if d := c.dropped.Load(); d != dropped && !c.isCut() {
			dropped = d
			h.Reconnected()
		}
		if time.Since(last) < c.every {
			continue
		}
		last = time.Now()
		c.renew(h)
	}
}

func (c *Cluster) isCut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut
}

// renew renews the lease; a lease that lapsed is told (LeaseLost), and
// the relay announces itself again, under a new id, at the next renewal.
func (c *Cluster) renew(h history.ClusterHooks) {
	c.mu.Lock()
	id, ok, renewed := c.id, c.leaseOK, c.renewed
	c.mu.Unlock()
	if !ok {
		if err := c.register(true); err != nil {
			c.log.Debug("memcluster: announce again", "err", err)
			return
		}
		c.log.Info("memcluster: relay announced again, as another", "relay", c.ID(), "was", id)
		h.RelayGone(id)
		return
	}
	n := c.net
	n.mu.Lock()
	c.mu.Lock()
	now := time.Now()
	cut := c.cut
	held := !cut && n.leaseHeldLocked(id, now)
	if held {
		n.leases[id] = now.Add(c.lease)
		c.renewed = now
	}
	c.mu.Unlock()
	n.mu.Unlock()
	switch {
	case held:
	case !cut:
		c.loseLease(errors.New("the renewal was refused: the lease is gone"))
	case time.Since(renewed) >= c.lease:
		c.loseLease(fmt.Errorf("no renewal for %v: %w", time.Since(renewed).Round(time.Millisecond), errCut))
	}
}

// loseLease tells the relay, once, that its lease lapsed.
func (c *Cluster) loseLease(why error) {
	c.mu.Lock()
	was, h := c.leaseOK, c.hooks
	c.leaseOK = false
	clear(c.claimed)
	c.mu.Unlock()
	if !was {
		return
	}
	c.log.Error("memcluster: this relay's lease lapsed: it stops owning its conversations (other relays take them over)", "relay", c.ID(), "err", why)
	if h != nil {
		h.LeaseLost(false)
	}
}

// deliver runs the relay's hooks for what the Net delivers, in order.
func (c *Cluster) deliver(ctx context.Context, h history.ClusterHooks) {
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-c.queue:
			c.handle(h, d)
		}
	}
}

func (c *Cluster) handle(h history.ClusterHooks, d delivery) {
	switch d.kind {
	case kindLive:
		c.liveMsgs.Add(1)
		h.Stored(d.id, d.events, d.state)
	case kindChanged:
		if c.following(d.id) {
			return // its live events said it
		}
		h.Stored(d.id, nil, d.state)
	case kindDeleted:
		c.s.forget(d.id)
		h.Deleted(d.id)
	case kindReconnected:
		h.Reconnected()
	case kindGone:
		c.lapses.Lapsed(d.id)
		c.log.Info("memcluster: a relay's lease lapsed", "relay", d.id)
		h.RelayGone(d.id)
	}
}

func (c *Cluster) following(id string) bool {
	c.net.mu.Lock()
	defer c.net.mu.Unlock()
	return c.follows[id] > 0
}

// Health says why the relay cannot serve ("" when it can): it stopped,
// is cut off, or its lease lapsed.
func (c *Cluster) Health() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.stopped:
		return "the relay is leaving the cluster"
	case c.cut:
		return "the relay is cut off from the cluster"
	case !c.leaseOK:
		return "the relay's lease lapsed"
	}
	return ""
}

// aliveNetLocked reports whether relay's lease holds: this relay's as it
// last saw its own, another's as the Net holds it. The caller holds the
// Net's mu (not c.mu, which it takes).
func (c *Cluster) aliveNetLocked(relay string) bool {
	c.mu.Lock()
	self, ok := c.id, c.leaseOK
	c.mu.Unlock()
	if relay == self {
		return ok
	}
	return c.net.leaseHeldLocked(relay, time.Now())
}

// lockNet locks the Net for a request of this relay's, unless it is cut
// off.
func (c *Cluster) lockNet() error {
	c.net.mu.Lock()
	c.mu.Lock()
	cut := c.cut
	c.mu.Unlock()
	if cut {
		c.net.mu.Unlock()
		return errCut
	}
	return nil
}

// Claim makes this relay the conversation's owner unless a relay whose
// lease holds owns it.
func (c *Cluster) Claim(ctx context.Context, id string) (owner, previous string, err error) {
	if err := c.lockNet(); err != nil {
		return "", "", fmt.Errorf("memcluster: claim %q: %w", id, err)
	}
	defer c.net.mu.Unlock()
	if err := c.fault(OpClaim, id); err != nil {
		return "", "", fmt.Errorf("memcluster: claim %q: %w", id, err)
	}
	n := c.net
	c.mu.Lock()
	self, ok := c.id, c.leaseOK
	c.mu.Unlock()
	// The lease as the Net holds it now, with the Net locked for the
	// whole claim: this relay's view of it (leaseOK) lags until its next
	// renewal, and a claim made after the lapse it has not noticed yet is
	// made under a dead id (jetstream's Claim checks the same with a
	// margin, having no lock over both buckets).
	if !ok || !n.leaseHeldLocked(self, time.Now()) {
		return "", "", fmt.Errorf("memcluster: claim %q: %w", id, history.ErrNoLease)
	}
	take := func() {
		n.rev++
		n.owners[id] = ownerRec{relay: self, rev: n.rev}
		c.mu.Lock()
		c.claimed[id] = n.rev
		c.mu.Unlock()
	}
	rec, ok := n.owners[id]
	if !ok {
		take()
		return self, "", nil
	}
	live := c.aliveNetLocked(rec.relay)
	switch {
	case rec.relay == self && live:
		c.mu.Lock()
		c.claimed[id] = rec.rev
		c.mu.Unlock()
		return self, "", nil
	case live:
		return rec.relay, rec.relay, nil
	}
	take()
	if rec.relay == self {
		return self, "", nil // its own, from before its lease lapsed
	}
	return self, rec.relay, nil
}

// Owner returns the conversation's owner and whether its lease holds.
func (c *Cluster) Owner(ctx context.Context, id string) (string, bool, error) {
	if err := c.lockNet(); err != nil {
		return "", false, fmt.Errorf("memcluster: who owns %q: %w", id, err)
	}
	defer c.net.mu.Unlock()
	rec, ok := c.net.owners[id]
	if !ok {
		return "", false, nil
	}
	return rec.relay, c.aliveNetLocked(rec.relay), nil
}

// Release removes this relay's owner record of a conversation, unless
// another relay has written it since.
func (c *Cluster) Release(ctx context.Context, id string) {
	c.mu.Lock()
	rev, ok := c.claimed[id]
	delete(c.claimed, id)
	c.mu.Unlock()
	if !ok {
		return
	}
	if err := c.lockNet(); err != nil {
		c.log.Debug("memcluster: release a conversation", "conversationId", id, "err", err)
		return
	}
	defer c.net.mu.Unlock()
	c.net.dropOwnerLocked(id, rev)
}

func (n *Net) dropOwnerLocked(id string, rev uint64) {
	if rec, ok := n.owners[id]; ok && rec.rev == rev {
		delete(n.owners, id)
	}
}

// Deleted tells every relay (this one too, as NATS echoes it) that the
// conversation was deleted.
func (c *Cluster) Deleted(ctx context.Context, id string) {
	if err := c.lockNet(); err != nil {
		c.log.Warn("memcluster: tell the relays of a delete", "conversationId", id, "err", err)
		return
	}
	defer c.net.mu.Unlock()
	for r := range c.net.receivers {
		r.enqueue(delivery{kind: kindDeleted, id: id})
	}
}

// Follow makes the Net deliver the conversation's appends to this relay
// until unfollow is called.
func (c *Cluster) Follow(ctx context.Context, id string) (unfollow func(), err error) {
	if err := c.lockNet(); err != nil {
		return func() {}, fmt.Errorf("memcluster: follow %q: %w", id, err)
	}
	defer c.net.mu.Unlock()
	c.mu.Lock()
	stopped := c.stopped || !c.started
	c.mu.Unlock()
	if stopped {
		return func() {}, errors.New("memcluster: stopped")
	}
	c.follows[id]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.net.mu.Lock()
			defer c.net.mu.Unlock()
			if c.follows[id]--; c.follows[id] <= 0 {
				delete(c.follows, id)
			}
		})
	}, nil
}

// Latest reads the conversation as stored now and makes the store's next
// write expect it.
func (c *Cluster) Latest(ctx context.Context, id string) (history.Conversation, error) {
	return c.s.latest(ctx, id)
}

// Stats is what a relay follows, as jetstream.ClusterStats says it.
type Stats struct {
	// Followed is how many conversations the relay follows.
	Followed int
	// LiveMessages counts the appends of followed conversations handed
	// to the relay.
	LiveMessages uint64
}

// Stats says what the relay follows.
func (c *Cluster) Stats() Stats {
	c.net.mu.Lock()
	defer c.net.mu.Unlock()
	return Stats{Followed: len(c.follows), LiveMessages: c.liveMsgs.Load()}
}

// Cut cuts the relay off, as if its NATS connection closed for good: it
// gets nothing more, answers no command, its store neither writes nor
// reads the tails, and its lease lapses (the others take its
// conversations over; it hears LeaseLost a lease after its last renewal).
func (c *Cluster) Cut() {
	n := c.net
	n.mu.Lock()
	defer n.mu.Unlock()
	c.mu.Lock()
	c.cut = true
	id := c.id
	c.mu.Unlock()
	c.s.mu.Lock()
	c.s.cut = true
	c.s.mu.Unlock()
	if n.members[id] == c {
		delete(n.members, id)
	}
	delete(n.receivers, c)
	clear(c.follows)
}

// Reconnect plays a connection that broke and came back: what was
// delivered but not yet handed to the relay is lost, and the relay hears
// Reconnected.
func (c *Cluster) Reconnect() {
	c.net.mu.Lock()
	defer c.net.mu.Unlock()
	for drained := false; !drained; {
		select {
		case <-c.queue:
		default:
			drained = true
		}
	}
	c.enqueue(delivery{kind: kindReconnected})
}

// Stop withdraws the relay: no more deliveries or commands, its owner
// records removed (others take its conversations at once) and its lease
// deleted (the others hear RelayGone).
func (c *Cluster) Stop(ctx context.Context) error {
	n := c.net
	n.mu.Lock()
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		n.mu.Unlock()
		return nil
	}
	c.stopped = true
	c.publish.Store(false)
	id, leaseOK, cut := c.id, c.leaseOK, c.cut
	claimed := c.claimed
	c.claimed = map[string]uint64{}
	cancel := c.cancel
	c.mu.Unlock()
	if n.members[id] == c {
		delete(n.members, id)
	}
	delete(n.receivers, c)
	clear(c.follows)
	n.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	done := make(chan struct{})
	go func() {
		c.workers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("memcluster: stop: %w", ctx.Err())
	}
	if cut {
		return nil // nothing reaches the Net: the lease lapses
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for conv, rev := range claimed {
		n.dropOwnerLocked(conv, rev)
	}
	delete(n.presence, id)
	if _, ok := n.leases[id]; ok && leaseOK {
		delete(n.leases, id)
		n.goneLocked(id)
	}
	return nil
}

// SetPresent keeps the tokens with a connection open on this relay
// (history.Presence) until the next call, the relay's Stop, or its lease
// lapsing. A relay cut off reaches nothing: its last set stays until its
// lease lapses, as on NATS.
func (c *Cluster) SetPresent(tokens [][sha256.Size]byte) {
	n := c.net
	n.mu.Lock()
	defer n.mu.Unlock()
	c.mu.Lock()
	id, gone := c.id, c.cut || c.stopped
	c.mu.Unlock()
	if gone {
		return
	}
	if len(tokens) == 0 {
		delete(n.presence, id)
		return
	}
	set := make(map[[sha256.Size]byte]bool, len(tokens))
	for _, t := range tokens {
		set[t] = true
	}
	n.presence[id] = set
}

// Present returns the tokens with a connection open on the other relays
// whose lease holds (history.Presence).
func (c *Cluster) Present() map[[sha256.Size]byte]bool {
	n := c.net
	n.mu.Lock()
	defer n.mu.Unlock()
	self := c.ID()
	now := time.Now()
	out := map[[sha256.Size]byte]bool{}
	for id, set := range n.presence {
		if id == self || !n.leaseHeldLocked(id, now) {
			continue
		}
		for t := range set {
			out[t] = true
		}
	}
	return out
}
