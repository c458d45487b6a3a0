package jetstream

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// Cluster is the relays sharing one Store: history.Cluster on JetStream
// (docs/scale-out.md, Several relays).
//
// It lives in this package rather than one of its own because it is the
// store's other half: it reads the messages the store writes (packs, the
// record header) as the stream republishes them, keeps the store's view of
// conversations other relays write, and uses the store's connection and
// names. Outside this package only the message format would have to be
// exported.
//
//   - Liveness: each relay holds a key in the pd_relays bucket, created
//     with a per-key TTL (the lease) and renewed every lease/5 with a
//     revision check. When renewals stop, the server removes the key after
//     the TTL and every relay's watcher hears of it.
//   - Ownership: pd_owners.<token> names the relay that owns the
//     conversation. Claim creates it, or replaces it (revision check) when
//     it names a relay whose lease lapsed: exactly one claimer wins.
//   - Commands: each relay answers requests on pilotdesk.relay.<id>.cmd.
//   - Events: the stream republishes every stored message on
//     pilotdesk.live.<token>; a relay subscribes to the conversations its
//     clients watch (Follow) and hands their events to its relay, which
//     delivers them to subscribers of conversations it does not own. The
//     lists hear of the others on pilotdesk.changed.<token>, where each
//     owner publishes a conversation's record when a list would show
//     something new (follow.go).
//
// The lease only says who should own a conversation; the store's fenced
// appends decide who can write: an old owner's append after a takeover is
// refused (history.ErrConflict).
type Cluster struct {
	s     *Store
	nc    *nats.Conn
	lease time.Duration
	every time.Duration // between renewals
	log   *slog.Logger
	// beforeRenew is ClusterOptions.BeforeRenew.
	beforeRenew func(ctx context.Context) error

	base   string // pilotdesk, or pilotdesk.<ns>: the prefix of the live and command subjects
	relays jetstream.KeyValue
	owners jetstream.KeyValue

	mu sync.Mutex // guards id, cmd, hooks, leaseRev, leaseOK, renewed, tried, epoch, stalled, former, renewErr, claimed, stopped
	// id is new at every announcement: a relay whose lease lapsed comes
	// back as another, so that what it owned under its old id is anyone's.
	id       string
	cmd      *nats.Subscription // the forwarded commands to id
	hooks    history.ClusterHooks
	leaseRev uint64    // revision of this relay's key
	leaseOK  bool      // the lease holds (renewed within the lease)
	renewed  time.Time // when the last successful create or renewal was sent: the server's TTL started later
	// tried is when the renewer last sent a renewal (or announcement),
	// whatever came of it: a renewer that tries and fails is cut off from
	// the store; one that has not tried for a lease was stalled with its
	// process (stalledLocked).
	tried time.Time
	// epoch counts the leases this relay has held; stalled is the last
	// one that lapsed while the relay was stalled (a SIGSTOP, a frozen
	// VM): a write that began under it appends nothing, even once the
	// relay has announced itself again (mayAppend).
	epoch, stalled uint64
	// former is the ids this relay announced itself under before, the
	// latest last (at most maxFormer): their leases are gone, whatever a
	// replica of their keys still says (alive).
	former []string
	// renewErr is why the last renewal (or announcement) failed, nil once
	// one succeeds: with no renewal for a while, the history store is
	// unreachable (Health).
	renewErr error
	claimed  map[string]uint64
	stopped  bool
	// lapses tells a Forward that its owner's lease lapsed: the watcher
	// sees it (relayLapsed).
	lapses history.Lapses

	// pres is which tokens have a connection open on each relay
	// (presence.go).
	pres presence

	// f is the subscriptions to the live and changes subjects (follow.go);
	// liveMsgs counts the live messages handled.
	f        followers
	liveMsgs atomic.Uint64

	// seenRelays is the other relays whose lease the watch of the leases
	// knows to hold. Start fills it from its list before it starts the
	// watch's goroutine, which owns it from then on.
	seenRelays map[string]bool

	// Owned by Start and Stop.
	ctx     context.Context // Start's, ended by Stop
	cancel  context.CancelFunc
	workers sync.WaitGroup // the renewer, the watcher, forwarded commands running
	slots   chan struct{}  // one per forwarded command running: at most maxForwarded

	// stopDeliver ends deliver's context (a child of ctx): Stop calls it
	// first, so that no message queued in f.msgs runs a hook once Stop has
	// begun; the one being handled ends before Stop returns (workers).
	stopDeliver context.CancelFunc

	// pending is the events of an atomic batch seen before its last
	// message (which carries the record). Owned by deliver, the one
	// goroutine that handles the live and change messages.
	pending map[string][]history.Event
	// records is the last record decoded of each followed conversation,
	// by subject token, to decode its next one against
	// (recordAfter). Owned by deliver, as pending.
	records map[string]*recordMemo
}

// ClusterOptions tune a Cluster.
type ClusterOptions struct {
	// Lease is how long a relay may go unheard before the others take its
	// conversations over. It must outlast a JetStream leader election
	// (4–9 s): default 15 s.
	Lease time.Duration
	// RenewEvery is how often the lease is renewed; default Lease/5. (A
	// test makes it longer than the lease to play a relay that stalls.)
	RenewEvery time.Duration
	// BeforeRenew is for tests: called before each renewal of the lease
	// (or announcement, once it lapsed), which waits for it to return (a
	// test holds it to play a relay whose process is paused); an error
	// fails that attempt as if the cluster had not answered (a quorum
	// loss). It must return once ctx ends.
	BeforeRenew func(ctx context.Context) error
	// Logger; default the store's.
	Logger *slog.Logger
}

// DefaultLease is the lease of a relay that sets none.
const DefaultLease = 15 * time.Second

// NewCluster opens the cluster's buckets (creating them if need be) and
// makes sure the events stream republishes what it stores, for the relays
// that do not own a conversation. It starts nothing: the relay calls Start.
func NewCluster(ctx context.Context, s *Store, opts ClusterOptions) (*Cluster, error) {
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.Logger == nil {
		opts.Logger = s.log
	}
	if opts.RenewEvery <= 0 {
		opts.RenewEvery = opts.Lease / 5
	}
	c := &Cluster{
		s: s, nc: s.nc, id: randomHex(8), lease: opts.Lease, every: opts.RenewEvery, log: opts.Logger,
		beforeRenew: opts.BeforeRenew,
		base:        strings.TrimSuffix(s.names.prefix, ".conv"),
		claimed:     map[string]uint64{},
		pending:     map[string][]history.Event{},
		records:     map[string]*recordMemo{},
		slots:       make(chan struct{}, maxForwarded),
	}
	suffix := strings.TrimPrefix(s.names.bucket, "pd_meta")
	var err error
	relays := s.kvConfig("pd_relays"+suffix, "pilotdesk relays alive: one key per relay, removed when its lease lapses")
	presence := s.kvConfig("pd_presence"+suffix, "pilotdesk relays' open connections: one key per relay, the SHA-256 of each token connected to it, lapsing with its lease")
	relays.LimitMarkerTTL = max(opts.Lease, time.Second)
	presence.LimitMarkerTTL = relays.LimitMarkerTTL
	if c.relays, err = c.bucket(ctx, relays); err != nil {
		return nil, err
	}
	if c.owners, err = c.bucket(ctx, s.kvConfig("pd_owners"+suffix, "pilotdesk conversations' owners: the relay that runs each one's agent")); err != nil {
		return nil, err
	}
	if c.pres.kv, err = c.bucket(ctx, presence); err != nil {
		return nil, err
	}
	c.pres.wake = make(chan struct{}, 1)
	c.pres.others = map[string]map[[sha256.Size]byte]bool{}
	if err := c.republish(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// suffix is what follows pd_ and the bucket's name in a namespace.
func (c *Cluster) suffix() string { return strings.TrimPrefix(c.s.names.bucket, "pd_meta") }

func (c *Cluster) bucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := c.s.openKV(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("jetstream cluster: %w", err)
	}
	return kv, nil
}

// liveSubject is where the stream republishes a conversation's messages.
func (c *Cluster) liveSubject(tok string) string { return c.base + ".live." + tok }

func (c *Cluster) cmdSubject(relay string) string { return c.base + ".relay." + relay + ".cmd" }

// republish adds each events stream's republish of stored messages to the
// live subjects, if it has none yet (a stream made by an older relay):
// UpdateStream keeps the rest of its configuration, the epoch included.
// Every stream republishes to the same live subjects: a conversation's
// live subject does not say which stream holds it.
func (c *Cluster) republish(ctx context.Context) error {
	for _, sh := range c.s.shards {
		if err := c.republishShard(ctx, sh); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) republishShard(ctx context.Context, sh *shard) error {
	want := &jetstream.RePublish{Source: sh.subject, Destination: c.base + ".live.{{wildcard(1)}}"}
	if rp := sh.st.CachedInfo().Config.RePublish; rp != nil && *rp == *want {
		return nil // as Open found it: the usual case, and no request
	}
	return c.s.leaderCall(ctx, func(ctx context.Context) error {
		info, err := sh.st.Info(ctx)
		if err != nil {
			return err
		}
		if rp := info.Config.RePublish; rp != nil {
			if rp.Destination != want.Destination || rp.HeadersOnly {
				return fmt.Errorf("jetstream cluster: stream %s republishes to %s, want %s", sh.stream, rp.Destination, want.Destination)
			}
			return nil
		}
		cfg := info.Config
		cfg.RePublish = want
		if _, err := c.s.js.UpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("jetstream cluster: make stream %s republish: %w", sh.stream, err)
		}
		return nil
	})
}

// ID is this relay's, as it last announced itself.
func (c *Cluster) ID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

// announceAtStart announces the relay as any leader's request is made
// (leaderCall): again while nobody answers (a leader election of the
// relays' bucket, 4-9 s, or a quorum that is not back yet), for up to the
// store's WriteTimeout, as its Open waits. A relay started during an
// election exited at once (tests/reliability's TestNATSCrashRecovery, the
// stream's leader killed, at a load average of 15: "announce relay …:
// nats: no response from stream"). Each try after the first takes a new
// id, since an announcement whose answer was lost may have been stored:
// its key then lapses with its TTL.
func (c *Cluster) announceAtStart(ctx context.Context) error {
	again := false
	return c.s.leaderCall(ctx, func(ctx context.Context) error {
		err := c.register(ctx, again)
		if err != nil && passing(err) {
			c.log.Warn("jetstream cluster: nobody answered the relay's announcement (a leader election?); trying again", "err", err)
		}
		again = true
		return err
	})
}

// Start creates the lease, answers forwarded commands, follows the live
// events and the other relays' leases.
func (c *Cluster) Start(h history.ClusterHooks) error {
	ctx, cancel := context.WithCancel(context.Background())
	c.ctx, c.cancel = ctx, cancel
	c.mu.Lock()
	c.hooks = h
	c.mu.Unlock()
	fail := func(err error) error {
		cancel()
		c.mu.Lock()
		cmd := c.cmd
		c.cmd = nil
		c.mu.Unlock()
		if cmd != nil {
			_ = cmd.Unsubscribe()
		}
		c.stopFollowing()
		return err
	}
	if err := c.announceAtStart(ctx); err != nil {
		return fail(err)
	}
	c.s.lease.Store(c) // the store appends only while the lease holds
	// The watcher first, then the list: a relay that comes or goes in
	// between is seen by the watcher.
	// The changes from now on: the list says what holds now.
	watcher, err := c.s.startWatch(ctx, c.relays, jetstream.AllKeys, jetstream.UpdatesOnly())
	if err != nil {
		return fail(fmt.Errorf("jetstream cluster: watch the relays: %w", err))
	}
	lctx, lcancel := context.WithTimeout(ctx, c.lease)
	relays, err := c.listRelays(lctx)
	lcancel()
	if err == nil {
		// A relay that falls behind must not lose its connection for it:
		// past liveQueue messages are dropped, counted, and the relay
		// catches up from the stream.
		err = c.startFollowing(relays)
	}
	c.seenRelays = map[string]bool{}
	for id := range relays {
		if id != c.ID() {
			c.seenRelays[id] = true
		}
	}
	if err != nil {
		watcher.stop()
		return fail(err)
	}
	// The others' open connections, as they are now and as they change
	// (presence.go).
	presWatch, err := c.s.startWatch(ctx, c.pres.kv, jetstream.AllKeys)
	if err != nil {
		watcher.stop()
		return fail(fmt.Errorf("jetstream cluster: watch the relays' presence: %w", err))
	}
	prefix := c.changedSubject("")
	c.s.changes.Store(&prefix)
	dctx, stopDeliver := context.WithCancel(ctx)
	c.stopDeliver = stopDeliver
	c.workers.Go(func() { c.deliver(dctx) })
	c.workers.Go(func() { c.watchPresence(ctx, presWatch) })
	c.workers.Go(func() { c.writePresence(ctx) })
	c.workers.Go(func() { c.watchRelays(ctx, watcher) })
	c.workers.Go(func() { c.renew(ctx) })
	c.log.Info("jetstream cluster: relay announced", "relay", c.ID(), "lease", c.lease)
	// A change told between the relay's listing of the conversations and
	// the subscription above was missed: it lists them again.
	h.Reconnected()
	return nil
}

// Stop withdraws the relay: no more commands or events, its owner records
// removed (the conversations it owned are taken by whichever relay next
// needs them, at once) and its lease deleted.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	cmd := c.cmd
	c.cmd = nil
	c.mu.Unlock()
	// The command subject goes first: from then on a sender gets "no
	// responders" at once (and asks again, then routes elsewhere) instead
	// of waiting forwardTimeout for an answer that never comes. Drained,
	// so that the commands already queued are answered (not owner) rather
	// than dropped.
	var cmdClosed <-chan nats.SubStatus
	if cmd != nil {
		cmdClosed = cmd.StatusChanged(nats.SubscriptionClosed)
		if err := cmd.Drain(); err != nil {
			_ = cmd.Unsubscribe()
			cmdClosed = nil
		}
	}
	c.mu.Lock()
	c.stopped = true
	if again := c.cmd; again != nil {
		// Announced again (renew) meanwhile: withdrawn too.
		c.cmd = nil
		_ = again.Unsubscribe()
	}
	claimed := make(map[string]uint64, len(c.claimed))
	for k, v := range c.claimed {
		claimed[k] = v
	}
	clear(c.claimed)
	leaseOK, id := c.leaseOK, c.id
	c.mu.Unlock()
	if c.stopDeliver != nil {
		c.stopDeliver()
	}
	c.stopFollowing()
	if c.cancel != nil {
		c.cancel()
	}
	done := make(chan struct{})
	go func() {
		// deliver among them: the live message it is handling, if any,
		// ends (its hook runs against a relay still open), and it handles
		// no other (its context ended).
		c.workers.Wait()
		if cmdClosed != nil {
			<-cmdClosed // the queued commands answered
		}
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("jetstream cluster: stop: %w", ctx.Err())
	}
	var errs []error
	for key, rev := range claimed {
		if err := c.dropOwner(ctx, key, rev); err != nil {
			errs = append(errs, err)
		}
	}
	c.dropPresence(ctx)
	if leaseOK {
		if err := c.relays.Delete(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("jetstream cluster: withdraw relay %s: %w", id, errors.Join(errs...))
	}
	return nil
}
