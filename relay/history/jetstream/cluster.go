package jetstream

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
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

	mu sync.Mutex // guards id, cmd, hooks, leaseRev, leaseOK, renewed, tried, epoch, stalled, former, renewErr, claimed, stopped, lapsed
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
	// lapsed has a channel per relay a command is being forwarded to,
	// closed when the watcher sees that relay's lease lapse (lapseOf).
	lapsed map[string]chan struct{}

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

	// liveMu is held by onLive for a whole message, hooks included, so
	// that Stop can wait for the one running; liveStopped, set by Stop,
	// makes the messages after it run no hook (nats.go's Unsubscribe
	// neither waits for a running callback nor for those it dropped).
	liveMu      sync.Mutex
	liveStopped atomic.Bool

	// pending is the events of an atomic batch seen before its last
	// message (which carries the record). Owned by the live subscription's
	// handler, which nats.go runs on one goroutine.
	pending map[string][]history.Event
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
		slots:       make(chan struct{}, maxForwarded),
	}
	suffix := strings.TrimPrefix(s.names.bucket, "pd_meta")
	var err error
	if c.relays, err = c.bucket(ctx, jetstream.KeyValueConfig{
		Bucket:         "pd_relays" + suffix,
		Description:    "pilotdesk relays alive: one key per relay, removed when its lease lapses",
		History:        1,
		Storage:        jetstream.FileStorage,
		Replicas:       s.opts.Replicas,
		LimitMarkerTTL: max(opts.Lease, time.Second),
	}); err != nil {
		return nil, err
	}
	if c.owners, err = c.bucket(ctx, jetstream.KeyValueConfig{
		Bucket:      "pd_owners" + suffix,
		Description: "pilotdesk conversations' owners: the relay that runs each one's agent",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    s.opts.Replicas,
	}); err != nil {
		return nil, err
	}
	if c.pres.kv, err = c.bucket(ctx, jetstream.KeyValueConfig{
		Bucket:         "pd_presence" + suffix,
		Description:    "pilotdesk relays' open connections: one key per relay, the SHA-256 of each token connected to it, lapsing with its lease",
		History:        1,
		Storage:        jetstream.FileStorage,
		Replicas:       s.opts.Replicas,
		LimitMarkerTTL: max(opts.Lease, time.Second),
	}); err != nil {
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

// republish adds the stream's republish of stored messages to the live
// subjects, if the stream has none yet (a stream made by an older relay):
// UpdateStream keeps the rest of its configuration, the epoch included.
func (c *Cluster) republish(ctx context.Context) error {
	want := &jetstream.RePublish{Source: c.s.names.subject, Destination: c.base + ".live.{{wildcard(1)}}"}
	if rp := c.s.stream.CachedInfo().Config.RePublish; rp != nil && *rp == *want {
		return nil // as Open found it: the usual case, and no request
	}
	return c.s.leaderCall(ctx, func(ctx context.Context) error {
		info, err := c.s.stream.Info(ctx)
		if err != nil {
			return err
		}
		if rp := info.Config.RePublish; rp != nil {
			if rp.Destination != want.Destination || rp.HeadersOnly {
				return fmt.Errorf("jetstream cluster: stream %s republishes to %s, want %s", c.s.names.stream, rp.Destination, want.Destination)
			}
			return nil
		}
		cfg := info.Config
		cfg.RePublish = want
		if _, err := c.s.js.UpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("jetstream cluster: make stream %s republish: %w", c.s.names.stream, err)
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
	if err := c.register(ctx, false); err != nil {
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
	c.workers.Add(5)
	go func() {
		defer c.workers.Done()
		c.deliver(ctx)
	}()
	go func() {
		defer c.workers.Done()
		c.watchPresence(ctx, presWatch)
	}()
	go func() {
		defer c.workers.Done()
		c.writePresence(ctx)
	}()
	go func() {
		defer c.workers.Done()
		c.watchRelays(ctx, watcher)
	}()
	go func() {
		defer c.workers.Done()
		c.renew(ctx)
	}()
	c.log.Info("jetstream cluster: relay announced", "relay", c.ID(), "lease", c.lease)
	// A change told between the relay's listing of the conversations and
	// the subscription above was missed: it lists them again.
	h.Reconnected()
	return nil
}

// serveCommands answers the commands forwarded to relay id.
func (c *Cluster) serveCommands(id string) (*nats.Subscription, error) {
	sub, err := c.nc.Subscribe(c.cmdSubject(id), func(m *nats.Msg) {
		// A command may wait (a delete under way): one goroutine each, so
		// that one never holds up another. Added under mu, so that none
		// is added once Stop waits for them.
		c.mu.Lock()
		h, stopped := c.hooks, c.stopped
		if !stopped {
			c.workers.Add(1)
		}
		c.mu.Unlock()
		if stopped {
			// Queued before Stop withdrew the subject: answered at once
			// (silence would keep the sender waiting forwardTimeout), so
			// that it routes the command again.
			c.answerNotOwner(m)
			return
		}
		// At most maxForwarded at once: a flood of forwarded commands
		// waits here, in the subscription's bounded pending queue (past
		// it nats.go drops them, and their senders time out), instead of
		// a goroutine each.
		select {
		case c.slots <- struct{}{}:
		case <-c.ctx.Done():
			c.workers.Done()
			c.answerNotOwner(m)
			return
		}
		go func() {
			defer c.workers.Done()
			defer func() { <-c.slots }()
			cctx, cancel := context.WithTimeout(c.ctx, forwardTimeout)
			defer cancel()
			if err := m.Respond(h.Command(cctx, m.Data)); err != nil {
				c.log.Warn("jetstream cluster: answer a forwarded command", "err", err)
			}
		}()
	})
	if err != nil {
		return nil, fmt.Errorf("jetstream cluster: subscribe to commands: %w", err)
	}
	if err := c.nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("jetstream cluster: subscribe to commands: %w", err)
	}
	return sub, nil
}

// hdrNotOwner marks the answer of a relay that is stopping to a command
// forwarded to it: Forward returns history.ErrNotOwner, and the sender
// routes the command again.
const hdrNotOwner = "Pd-Not-Owner"

func (c *Cluster) answerNotOwner(m *nats.Msg) {
	if m.Reply == "" {
		return
	}
	a := &nats.Msg{Subject: m.Reply, Header: nats.Header{}}
	a.Header.Set(hdrNotOwner, "1")
	if err := c.nc.PublishMsg(a); err != nil {
		c.log.Debug("jetstream cluster: answer a forwarded command: stopping", "err", err)
	}
}

// maxForwarded bounds the forwarded commands a relay runs at once.
const maxForwarded = 256

// forwardTimeout bounds a forwarded command at the owner, and the wait
// for its answer.
const forwardTimeout = 10 * time.Second

// register announces the relay: its key with the lease as TTL, and its
// command subject. again: it comes back after its lease lapsed, under a
// new id.
func (c *Cluster) register(ctx context.Context, again bool) error {
	c.mu.Lock()
	id := c.id
	c.mu.Unlock()
	if again {
		id = randomHex(8)
	}
	sub, err := c.serveCommands(id)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, c.lease)
	defer cancel()
	sent := time.Now()
	rev, err := c.relays.Create(rctx, id, newLeaseValue(), jetstream.KeyTTL(c.lease))
	if err != nil {
		_ = sub.Unsubscribe()
		return fmt.Errorf("jetstream cluster: announce relay %s: %w", id, err)
	}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		_ = sub.Unsubscribe()
		return errors.New("jetstream cluster: stopped")
	}
	old := c.cmd
	if c.id != id {
		c.former = append(c.former, c.id)
		if len(c.former) > maxFormer {
			c.former = slices.Delete(c.former, 0, len(c.former)-maxFormer)
		}
	}
	c.id, c.cmd = id, sub
	c.leaseRev, c.leaseOK, c.renewed, c.tried = rev, true, sent, sent
	c.epoch++
	c.mu.Unlock()
	if old != nil {
		_ = old.Unsubscribe()
	}
	return nil
}

// renew keeps the lease: every lease/5 it publishes the key again with a
// revision check and the TTL (nats.go's KeyValue.Update sets no TTL).
// When no renewal has succeeded for a whole lease, the others may have
// taken this relay's conversations: it tells the relay (LeaseLost) and
// announces itself again as soon as it can.
func (c *Cluster) renew(ctx context.Context) {
	tick := time.NewTicker(min(c.every, time.Second))
	defer tick.Stop()
	reconnects := c.nc.Stats().Reconnects
	dropped := 0
	last := time.Now() // registered just now
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Checked each second: the events published while the connection
		// was down were lost to this relay, and so were those the live
		// subscription dropped when it fell behind (a slow consumer);
		// the relay catches up from the stream.
		d := c.dropped()
		if n := c.nc.Stats().Reconnects; (n != reconnects || d != dropped) && c.nc.IsConnected() {
			reconnects, dropped = n, d
			h := c.hooksNow()
			h.Reconnected()
		}
		if time.Since(last) < c.every {
			continue
		}
		var hookErr error
		if c.beforeRenew != nil {
			hookErr = c.beforeRenew(ctx)
		}
		last = time.Now()
		c.mu.Lock()
		id, ok, rev, renewed, h := c.id, c.leaseOK, c.leaseRev, c.renewed, c.hooks
		// Stalled with its process (no renewal sent for a lease): the
		// lease may have lapsed at the server long ago; the relay learns
		// it lost its conversations before anything else it does.
		stalled := ok && c.stalledLocked(last)
		c.tried = last
		c.mu.Unlock()
		if stalled {
			c.loseLease(fmt.Errorf("no renewal sent for %v: the relay was stalled (its process paused?)", time.Since(renewed).Round(time.Millisecond)), true)
			ok = false
		}
		if !ok {
			err := hookErr
			if err == nil {
				err = c.register(ctx, true)
			}
			c.noteRenewal(err)
			if err != nil {
				c.log.Debug("jetstream cluster: announce again", "err", err)
				continue
			}
			c.log.Info("jetstream cluster: relay announced again, as another", "relay", c.ID(), "was", id)
			// What it owned as id is anyone's now, its own clients'
			// conversations included: it may take them over like any
			// relay whose clients watch them.
			h.RelayGone(id)
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, min(c.every, c.lease/2))
		sent := time.Now()
		err := hookErr
		var ack *jetstream.PubAck
		if err == nil {
			ack, err = c.s.js.PublishMsg(rctx, &nats.Msg{Subject: "$KV." + c.relaysBucket() + "." + id, Data: newLeaseValue()},
				jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(c.lease))
		}
		cancel()
		c.noteRenewal(err)
		var apiErr *jetstream.APIError
		switch {
		case err == nil:
			c.mu.Lock()
			if c.leaseOK && c.id == id {
				c.leaseRev, c.renewed = ack.Sequence, sent
			}
			c.mu.Unlock()
			continue
		case errors.As(err, &apiErr) && apiErr.ErrorCode == codeWrongLastSeq:
			// The key is gone or another: the lease lapsed.
			c.loseLease(fmt.Errorf("the renewal was refused: %w", err), false)
			continue
		}
		if time.Since(renewed) >= c.lease-c.margin() {
			c.loseLease(fmt.Errorf("no renewal for %v: %w", time.Since(renewed).Round(time.Millisecond), err), false)
		} else {
			c.log.Debug("jetstream cluster: renew the lease", "err", err)
		}
	}
}

func (c *Cluster) relaysBucket() string {
	return "pd_relays" + c.suffix()
}

// margin is how long before the lease's end, as this relay counts it
// from the renewal it sent last, it stops trusting the lease: a message
// sent then reaches the server before the server's TTL of the key ends.
func (c *Cluster) margin() time.Duration { return c.lease / 10 }

// maxFormer bounds Cluster.former: a lease lapses within the lease, so
// only the latest few of a relay's former ids can still have a key.
const maxFormer = 8

// stalledLocked reports whether, at now, this relay's lease went
// unconfirmed for the lease less the margin while its renewer sent
// nothing either: the process (or the renewer) was stalled, not cut off
// from the store, so the lease may well have lapsed at the server and
// another relay may have read the stream to take its conversations over.
// A relay whose renewals are sent but fail (a quorum loss) is not
// stalled: no other relay can take over while the store is down, and its
// appends go out and fail, or are stored, as the store decides.
func (c *Cluster) stalledLocked(now time.Time) bool {
	limit := c.lease - c.margin()
	return now.Sub(c.renewed) >= limit && now.Sub(c.tried) >= limit
}

// leaseEpoch is the lease a write begins under (Store.Write); 0 for a
// store of no cluster, or before the cluster has started.
func (s *Store) leaseEpoch() uint64 {
	c := s.lease.Load()
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// mayAppend says whether an append of a write that began under lease
// epoch may go out now. It may not once the relay was stalled past its
// lease under that epoch (a SIGSTOP, a frozen VM: stalledLocked, noticed
// here or by the renewer): another relay may have read the stream to
// take the conversations over, and the append would land before that
// relay's closing events. Then the relay learns it lost them (loseLease)
// and appends nothing it had queued, even if its renewer, paused with it,
// has not noticed yet. Any other lapse (renewals that fail: a quorum
// loss, a relay cut off) refuses nothing: the appends fail while the
// store is down, and the fence refuses one that another relay's append
// preceded. It returns nil for a store of no cluster.
func (s *Store) mayAppend(epoch uint64) error {
	c := s.lease.Load()
	if c == nil {
		return nil
	}
	now := time.Now()
	c.mu.Lock()
	stalled := c.leaseOK && c.epoch == epoch && c.stalledLocked(now)
	since := now.Sub(c.renewed)
	refused := epoch <= c.stalled
	c.mu.Unlock()
	if stalled {
		c.loseLease(fmt.Errorf("no renewal sent for %v when an append was to go out: the relay was stalled (its process paused?)", since.Round(time.Millisecond)), true)
		return fmt.Errorf("%w (not renewed for %v)", history.ErrLeaseLost, since.Round(time.Millisecond))
	}
	if refused {
		return history.ErrLeaseLost
	}
	return nil
}

// loseLease tells the relay, once, that its lease lapsed; stalled: it
// lapsed while the relay was stalled (mayAppend).
func (c *Cluster) loseLease(why error, stalled bool) {
	c.mu.Lock()
	was, h := c.leaseOK, c.hooks
	c.leaseOK = false
	if was && stalled {
		c.stalled = c.epoch
	}
	clear(c.claimed)
	c.mu.Unlock()
	if !was {
		return
	}
	c.log.Error("jetstream cluster: this relay's lease lapsed: it stops owning its conversations (other relays take them over)", "relay", c.ID(), "err", why)
	if h != nil {
		h.LeaseLost(stalled)
	}
}

// watchRelays tells the relay of every other relay whose key goes away,
// and notes which relays publish record changes (follow.go).
func (c *Cluster) watchRelays(ctx context.Context, sw *standingWatch) {
	sw.follow(ctx, func(e jetstream.KeyValueEntry) {
		if e == nil {
			return
		}
		if e.Operation() == jetstream.KeyValuePut {
			if e.Key() != c.ID() {
				c.seenRelays[e.Key()] = true
			}
			c.noteRelay(e.Key(), e.Value())
			return
		}
		if e.Key() == c.ID() {
			return // the renewer finds out
		}
		c.relayLapsed(e.Key())
	}, func() { c.relaysResumed(ctx) })
}

// relayLapsed tells of a relay whose lease lapsed: its commands waiting
// go on, and the relay may take its conversations over (RelayGone).
func (c *Cluster) relayLapsed(id string) {
	delete(c.seenRelays, id)
	c.noteRelay(id, nil)
	c.log.Info("jetstream cluster: a relay's lease lapsed", "relay", id)
	c.mu.Lock()
	h := c.hooks
	if ch, ok := c.lapsed[id]; ok {
		close(ch)
		delete(c.lapsed, id)
	}
	c.mu.Unlock()
	if h != nil {
		h.RelayGone(id)
	}
}

// relaysResumed lists the leases once the watch of them is set up again
// after it stopped: a relay that came meanwhile is noted, and one that
// the watch knew and whose lease is gone now lapsed in the gap.
func (c *Cluster) relaysResumed(ctx context.Context) {
	var relays map[string][]byte
	for wait := 20 * time.Millisecond; ; {
		lctx, cancel := context.WithTimeout(ctx, c.lease)
		var err error
		relays, err = c.listRelays(lctx)
		cancel()
		if err == nil {
			break
		}
		c.log.Warn("jetstream cluster: could not list the relays after the watch of their leases came back; trying again", "err", err)
		if backOff(ctx, &wait) != nil {
			return
		}
	}
	self := c.ID()
	for id, v := range relays {
		if id != self {
			c.seenRelays[id] = true
			c.noteRelay(id, v)
		}
	}
	for id := range c.seenRelays {
		if _, ok := relays[id]; !ok {
			c.relayLapsed(id)
		}
	}
}

// noteRenewal records the outcome of a renewal or announcement (Health).
func (c *Cluster) noteRenewal(err error) {
	c.mu.Lock()
	c.renewErr = err
	c.mu.Unlock()
}

// Health says why the relay cannot serve its clients now ("" when it
// can): it is cut off from NATS, its lease lapsed, or the history store
// has not answered a renewal of the lease for half the lease (the
// JetStream cluster lost its quorum, or has no leader for that long). A
// leader election (4–9 s) is shorter than half the default lease.
func (c *Cluster) Health() string {
	c.mu.Lock()
	ok, stopped, since, renewErr := c.leaseOK, c.stopped, time.Since(c.renewed), c.renewErr
	c.mu.Unlock()
	switch {
	case stopped:
		return "the relay is leaving the cluster"
	case !c.nc.IsConnected():
		return "the relay is not connected to NATS (" + c.nc.Status().String() + ")"
	case !ok:
		return "the relay's lease lapsed: it could not reach the history store (NATS JetStream) in time; it announces itself again as soon as it can"
	case renewErr != nil && since >= c.lease/2:
		// The error itself goes to the log (renew), not to whoever asks
		// /healthz.
		return fmt.Sprintf("the history store (NATS JetStream) has not answered for %v: has the NATS cluster lost its quorum?", since.Round(100*time.Millisecond))
	}
	return ""
}

// alive reports whether a relay's lease holds.
func (c *Cluster) alive(ctx context.Context, relay string) (bool, error) {
	c.mu.Lock()
	self, ok, former := c.id, c.leaseOK, slices.Contains(c.former, relay)
	c.mu.Unlock()
	if relay == self {
		return ok, nil
	}
	if former {
		// Its own lease from before it announced itself again: gone,
		// though a replica may still serve its key, or its TTL may not
		// have ended yet at the server (a quorum loss delays it). Counted
		// alive, the relay's own turns left open under it stayed open.
		return false, nil
	}
	e, err := c.relays.Get(ctx, relay)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("jetstream cluster: is relay %s alive: %w", relay, err)
	}
	return e.Operation() == jetstream.KeyValuePut, nil
}

// Claim makes this relay the owner of a conversation nobody live owns.
func (c *Cluster) Claim(ctx context.Context, id string) (owner, previous string, err error) {
	key := token(id)
	c.mu.Lock()
	self, ok := c.id, c.leaseOK
	c.mu.Unlock()
	if !ok {
		// Claimed under an id whose lease lapsed, the conversation would
		// be anyone's at once: another relay would claim and write it
		// too, and this one, thinking it owns it, would never hear of
		// that (an owner follows nothing), serving a history cut where
		// it last wrote (TestChaos quorum-loss: a replay ended at seq
		// 289 of 1037). It claims again once it has announced itself
		// again.
		return "", "", fmt.Errorf("jetstream cluster: claim %q: %w", id, history.ErrNoLease)
	}
	// A lost race means another relay's write came first: look again. A
	// replica's read may not show that write yet (the KV's reads are
	// served by any replica), so the next look waits a little, longer
	// each time: with 8 looks at once, two relays claiming under load
	// (a load of 10 on 2 cores) both ran out of looks.
	wait := 5 * time.Millisecond
	for try := range claimTries {
		if try > 0 {
			select {
			case <-ctx.Done():
				return "", "", fmt.Errorf("jetstream cluster: claim %q: %w", id, ctx.Err())
			case <-time.After(wait):
			}
			wait = min(2*wait, 500*time.Millisecond)
		}
		e, err := c.owners.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			rev, err := c.owners.Create(ctx, key, []byte(self))
			if lostClaim(err) {
				continue // another relay was faster: look again
			}
			if err != nil {
				return "", "", fmt.Errorf("jetstream cluster: claim %q: %w", id, err)
			}
			c.noteClaim(key, rev)
			return self, "", nil
		}
		if err != nil {
			return "", "", fmt.Errorf("jetstream cluster: who owns %q: %w", id, err)
		}
		cur := string(e.Value())
		live, err := c.alive(ctx, cur)
		if err != nil {
			return "", "", err
		}
		if cur == self && live {
			c.noteClaim(key, e.Revision())
			return self, "", nil
		}
		if live {
			return cur, cur, nil
		}
		rev, err := c.owners.Update(ctx, key, []byte(self), e.Revision())
		if lostClaim(err) {
			continue
		}
		if err != nil {
			return "", "", fmt.Errorf("jetstream cluster: take %q over from relay %s: %w", id, cur, err)
		}
		c.noteClaim(key, rev)
		if cur == self {
			cur = "" // its own, from before its lease lapsed
		}
		return self, cur, nil
	}
	return "", "", fmt.Errorf("jetstream cluster: claim %q: the owner record keeps changing", id)
}

// claimTries bounds Claim's looks at the owner record: about 6 s of
// waiting in all, far more than a write takes to reach every replica.
const claimTries = 20

// lostClaim reports whether a conditional write of an owner record was
// refused because another relay's got there first: 10071, or, on a
// cluster, 10164 while the other's write is still being proposed
// (ErrKeyRevisionMismatch). Either way the claimant looks again, and a
// relay releasing its record finds it another's (dropOwner).
func lostClaim(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

func (c *Cluster) noteClaim(key string, rev uint64) {
	c.mu.Lock()
	c.claimed[key] = rev
	c.mu.Unlock()
}

// Owner returns a conversation's owner and whether its lease holds.
func (c *Cluster) Owner(ctx context.Context, id string) (string, bool, error) {
	e, err := c.owners.Get(ctx, token(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("jetstream cluster: who owns %q: %w", id, err)
	}
	owner := string(e.Value())
	live, err := c.alive(ctx, owner)
	return owner, live, err
}

// Release removes this relay's owner record of a conversation.
func (c *Cluster) Release(ctx context.Context, id string) {
	key := token(id)
	c.mu.Lock()
	rev, ok := c.claimed[key]
	delete(c.claimed, key)
	c.mu.Unlock()
	if !ok {
		return
	}
	if err := c.dropOwner(ctx, key, rev); err != nil {
		c.log.Debug("jetstream cluster: release a conversation", "conversationId", id, "err", err)
	}
}

// dropOwner deletes this relay's owner record key, as it was at rev. A
// record another relay has written since (it took the conversation over:
// 10071, or, on a cluster, 10164 while its write is still being proposed,
// as lostClaim says) is that relay's now, and stays: no error.
func (c *Cluster) dropOwner(ctx context.Context, key string, rev uint64) error {
	if err := c.owners.Delete(ctx, key, jetstream.LastRevision(rev)); err != nil && !lostClaim(err) {
		return err
	}
	return nil
}

// errLeaseLapsed is why a forward stopped: its owner's lease lapsed.
var errLeaseLapsed = errors.New("its lease lapsed")

// lapseOf is closed when relay's lease lapses. A relay that died can still
// seem to listen for a while (its subscription's interest outlives it on
// the other nodes of the cluster), and a command sent to it then waits out
// forwardTimeout, after the conversation has been taken over.
func (c *Cluster) lapseOf(relay string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lapsed == nil {
		c.lapsed = map[string]chan struct{}{}
	}
	ch, ok := c.lapsed[relay]
	if !ok {
		ch = make(chan struct{})
		c.lapsed[relay] = ch
	}
	return ch
}

// Forward sends a command to the relay that owns the conversation. It
// stops waiting when the owner's lease lapses: the command is the
// unreachable owner's, which the sender takes over and runs itself.
func (c *Cluster) Forward(ctx context.Context, owner string, cmd []byte) ([]byte, error) {
	lapse := c.lapseOf(owner)
	// Its lease may have lapsed before the watch could tell lapse.
	if ok, err := c.alive(ctx, owner); err == nil && !ok {
		return nil, fmt.Errorf("jetstream cluster: forward to relay %s: %w (%w)", owner, history.ErrUnreachable, errLeaseLapsed)
	}
	ctx, cancelTimeout := context.WithTimeout(ctx, forwardTimeout)
	defer cancelTimeout()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-lapse:
			cancel(errLeaseLapsed)
		case <-ctx.Done():
		}
	}()
	unreachable := func(err error) ([]byte, error) {
		return nil, fmt.Errorf("jetstream cluster: forward to relay %s: %w (%w)", owner, history.ErrUnreachable, err)
	}
	for attempt := 1; ; attempt++ {
		reply, err := c.nc.RequestWithContext(ctx, c.cmdSubject(owner), cmd)
		if err != nil && errors.Is(context.Cause(ctx), errLeaseLapsed) {
			return unreachable(errLeaseLapsed)
		}
		if err == nil && reply.Header.Get(hdrNotOwner) != "" {
			// It is stopping: it gives its conversations up in a moment,
			// and the sender routes the command again.
			return nil, fmt.Errorf("jetstream cluster: forward to relay %s: %w (%w)", owner, history.ErrUnreachable, history.ErrNotOwner)
		}
		if err == nil {
			return reply.Data, nil
		}
		// Nobody listens for the owner: it is reconnecting (its node
		// died), or dead, and then its lease lapses soon. Ask again for
		// a moment before saying it cannot be reached.
		if !errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("jetstream cluster: forward to relay %s: %w", owner, err)
		}
		if attempt == 8 {
			return unreachable(err)
		}
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), errLeaseLapsed) {
				return unreachable(errLeaseLapsed)
			}
			return nil, fmt.Errorf("jetstream cluster: forward to relay %s: %w", owner, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// hdrDeleted marks the notice, on a conversation's live subject, that it
// was deleted (the purge republishes nothing).
const hdrDeleted = "Pd-Deleted"

// Deleted tells every relay that a conversation was deleted: on its
// changes subject, and on its live subject for the relays of an older kind
// (which follow only those).
func (c *Cluster) Deleted(ctx context.Context, id string) {
	for _, subj := range []string{c.changedSubject(token(id)), c.liveSubject(token(id))} {
		m := &nats.Msg{Subject: subj, Header: nats.Header{}}
		m.Header.Set(hdrDeleted, "1")
		if err := c.nc.PublishMsg(m); err != nil {
			c.log.Warn("jetstream cluster: tell the relays of a delete (they learn it from the list meanwhile)", "conversationId", id, "err", err)
		}
	}
}

// Latest reads the conversation's last stored message through the
// stream's leader and makes it the store's expectation for the next
// append: a relay that takes a conversation over appends after what is
// stored, whatever its store saw before.
func (c *Cluster) Latest(ctx context.Context, id string) (history.Conversation, error) {
	st, err := c.s.state(id)
	if err != nil {
		return history.Conversation{}, err
	}
	st.write.Lock()
	defer st.write.Unlock()
	v, err := c.s.readTail(ctx, id)
	if err != nil {
		return history.Conversation{}, fmt.Errorf("jetstream cluster: %w", err)
	}
	c.s.mu.Lock()
	// The stream is the truth: the caller takes what it holds, an append
	// of this store's whose outcome was unsure included, and the next
	// append expects it.
	st.known, st.exists, st.tail, st.rec, st.unsure = true, v.exists, v.tail, v.rec, nil
	// Others may have told changes of it since this store did: its next
	// append, if it takes the conversation over, tells its record anew.
	st.toldOK = false
	c.s.mu.Unlock()
	if !v.exists {
		return history.Conversation{}, history.ErrNotFound
	}
	return v.rec.conversation(), nil
}

// deletedRemote forgets a conversation deleted on another relay (its
// half-received batch, the seqs seen of it) and tells this relay. On the
// live handler's goroutine, which owns pending.
func (c *Cluster) deletedRemote(h history.ClusterHooks, tok, id string) {
	delete(c.pending, tok)
	c.s.dropSeen(id)
	h.Deleted(id)
}

// onLive handles one message of a live subject: a stored message as the
// stream republished it, or a delete notice; or of a changes subject
// (onChanged). Events are handed to the
// relay with the record that follows them: the last message of every
// append carries it, and only then is the append whole (an atomic batch
// is republished message by message).
func (c *Cluster) onLive(m *nats.Msg) {
	c.liveMu.Lock()
	defer c.liveMu.Unlock()
	if c.liveStopped.Load() {
		return // Stop returned, or is waiting for this lock: no more hooks
	}
	tok, ok := c.liveToken(m.Subject)
	if !ok {
		if tok, ok := strings.CutPrefix(m.Subject, c.base+".changed."); ok {
			c.onChanged(tok, m)
		}
		return
	}
	c.liveMsgs.Add(1)
	h := c.hooksNow()
	if h == nil {
		return
	}
	if m.Header.Get(hdrDeleted) != "" {
		if !c.wideNow() {
			return // told on the changes subject too
		}
		id, ok := idOfToken(tok)
		if !ok {
			delete(c.pending, tok)
			return
		}
		c.deletedRemote(h, tok, id)
		return
	}
	streamSeq, _ := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	info, err := parseInfo(m.Header)
	if err != nil {
		c.log.Warn("jetstream cluster: a live message without pilotdesk headers", "subject", m.Subject, "err", err)
		return
	}
	events := c.pending[tok]
	switch info.kind {
	case kindPack:
		id, _ := idOfToken(tok)
		err := unpack(m.Data, func(seq int64, typ string, frame []byte) error {
			events = append(events, history.Event{ConversationID: id, Seq: seq, Type: typ, Frame: frame})
			return nil
		})
		if err != nil {
			c.log.Warn("jetstream cluster: a bad pack on a live subject", "subject", m.Subject, "err", err)
		}
	case kindEvent:
		if info.parts == 1 {
			id, _ := idOfToken(tok)
			events = append(events, history.Event{ConversationID: id, Seq: info.seq, Type: info.typ, Frame: m.Data})
		}
		// A frame in several messages is left to the relay, which reads it
		// from the stream when it sees the gap.
	}
	rec, ok, err := recordOf(m.Header, m.Data)
	if err != nil {
		c.log.Warn("jetstream cluster: a bad record on a live subject; the next one shows the gap", "subject", m.Subject, "err", err)
		delete(c.pending, tok)
		return
	}
	if !ok {
		// Bounded, whatever a peer publishes: an append whose last message
		// never comes (dropped, or a hostile publisher) would keep its
		// events for ever. What is dropped here the relay reads from the
		// store when the next record shows the gap.
		if _, held := c.pending[tok]; !held && len(c.pending) >= maxPendingConvs {
			clear(c.pending)
		}
		if len(events) > maxPendingEvents {
			events = nil
		}
		c.pending[tok] = events
		return
	}
	delete(c.pending, tok)
	if streamSeq > 0 {
		c.s.observe(rec.ID, streamSeq, rec)
	}
	h.Stored(rec.ID, events, rec.conversation())
}

// maxPendingConvs and maxPendingEvents bound Cluster.pending: the
// conversations with an unfinished append, and the events kept of one.
const (
	maxPendingConvs  = 4096
	maxPendingEvents = 4096
)

// idOfToken is the conversation id of a subject token.
func idOfToken(tok string) (string, bool) {
	if b64, ok := strings.CutPrefix(tok, "b64_"); ok {
		id, err := base64.RawURLEncoding.DecodeString(b64)
		return string(id), err == nil
	}
	return tok, tok != ""
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
	c.liveStopped.Store(true)
	c.stopFollowing()
	if c.cancel != nil {
		c.cancel()
	}
	done := make(chan struct{})
	go func() {
		// The live message being handled, if any, ends (its hook runs
		// against a relay still open); every later one sees liveStopped.
		c.liveMu.Lock()
		c.liveMu.Unlock() //nolint:staticcheck // a barrier, not a critical section
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

// observe notes a message another relay stored (seen on the live
// subject), so that replays read up to it.
func (s *Store) observe(id string, streamSeq uint64, rec record) {
	st, err := s.state(id)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if streamSeq > st.seen {
		st.seen, st.seenRec = streamSeq, rec
	}
}

// dropSeen forgets what was seen of a deleted conversation, and its state:
// the next read looks at the stream.
func (s *Store) dropSeen(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.convs[id]; st != nil {
		st.seen, st.seenRec = 0, record{}
		st.known = false
	}
}

// readView is what a read goes up to: the store's own view, or a later
// message another relay stored.
func (s *Store) readView(st *convState, v view) view {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.seen > v.tail {
		return view{exists: true, tail: st.seen, rec: st.seenRec}
	}
	return v
}
