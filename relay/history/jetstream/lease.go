package jetstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// The relay's lease: announcing itself in the relays bucket, renewing it,
// knowing when it lapsed (its own or another relay's), and refusing the
// appends of a relay that stalled past it.

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

// withdrawFormer deletes the lease key of id, the relay's former self,
// once it has announced itself again: the other relays' watches see the
// delete and take over what id owned (RelayGone) at once. Left to expire,
// the key told them only through its TTL's delete marker, which a quorum
// loss can swallow: in a TestChaos quorum-loss run (seed 3, load average
// 30) no relay heard of any other's former lease lapsing, and a
// conversation whose owner was one of them, left with its turn open and
// not watched on the relay that had been its owner, stayed open for good.
// A key that already expired is deleted again, harmlessly; a delete that
// fails leaves the TTL to end it, as before.
func (c *Cluster) withdrawFormer(ctx context.Context, id string) {
	dctx, cancel := context.WithTimeout(ctx, c.lease)
	defer cancel()
	if err := c.relays.Delete(dctx, id); err != nil {
		c.log.Warn("jetstream cluster: could not withdraw this relay's former lease; it ends with its TTL", "was", id, "err", err)
	}
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
			c.withdrawFormer(ctx, id)
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
			// The key is not at the revision this relay wrote last. It is
			// gone (the lease lapsed), or a renewal of this relay's was
			// stored while its acknowledgement was lost: the bucket's
			// leader stored it and was cut off the network before the
			// acknowledgement came back (TestChaos node-partition: a relay
			// on another node counted its lease lapsed 10 s into a 15 s
			// lease, and its turns were stopped). Only this relay writes
			// its key, so a key still there is its lease, renewed: it
			// renews from that revision at the next tick.
			switch got, state := c.ownLeaseRevision(ctx, id, rev); state {
			case leaseRenewed:
				c.mu.Lock()
				if c.leaseOK && c.id == id && c.leaseRev == rev {
					c.leaseRev = got
				}
				c.mu.Unlock()
				c.log.Info("jetstream cluster: a renewal of the lease was stored though its acknowledgement was lost; renewing from its revision", "relay", id, "revision", got)
				last = time.Time{}
				continue
			case leaseGone:
				c.loseLease(fmt.Errorf("the renewal was refused: %w", err), false)
				continue
			}
			// Not known (the read failed, or a replica's lags): as a
			// renewal that failed, below.
		}
		if time.Since(renewed) >= c.lease-c.margin() {
			c.loseLease(fmt.Errorf("no renewal for %v: %w", time.Since(renewed).Round(time.Millisecond), err), false)
		} else {
			c.log.Debug("jetstream cluster: renew the lease", "err", err)
		}
	}
}

// What a relay's key says of its lease after a renewal was refused.
const (
	leaseUnknown = iota // the key could not be read, or a replica's copy lags
	leaseRenewed        // there, written after the revision expected: renewed
	leaseGone           // gone: the lease lapsed
)

// ownLeaseRevision reads this relay's key after a renewal expecting
// revision rev was refused. Only this relay writes it, so a key there
// written after rev was renewed by this relay, by a renewal whose
// acknowledgement was lost: its revision is returned.
func (c *Cluster) ownLeaseRevision(ctx context.Context, id string, rev uint64) (uint64, int) {
	rctx, cancel := context.WithTimeout(ctx, min(c.every, c.lease/2))
	defer cancel()
	e, err := c.relays.Get(rctx, id)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		return 0, leaseGone
	case err != nil:
		return 0, leaseUnknown
	case e.Operation() != jetstream.KeyValuePut:
		return 0, leaseGone
	case e.Revision() <= rev:
		return 0, leaseUnknown
	}
	return e.Revision(), leaseRenewed
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
		if c.self(e.Key()) {
			// The renewer finds out; and a former id of this relay's
			// (withdrawFormer) it told the relay of when it announced
			// itself again. Told twice, the relay took the conversation
			// back twice at once, and the second take-over, finding it
			// already its own, closed the turn without naming the
			// relay that lost it (TestClusterLeaseLapses/stalled).
			return
		}
		c.relayLapsed(e.Key())
	}, func() { c.relaysResumed(ctx) })
}

// self reports whether id is this relay's, now or before it announced
// itself again.
func (c *Cluster) self(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return id == c.id || slices.Contains(c.former, id)
}

// relayLapsed tells of a relay whose lease lapsed: its commands waiting
// go on, and the relay may take its conversations over (RelayGone).
func (c *Cluster) relayLapsed(id string) {
	delete(c.seenRelays, id)
	c.noteRelay(id, nil)
	c.log.Info("jetstream cluster: a relay's lease lapsed", "relay", id)
	c.lapses.Lapsed(id)
	c.mu.Lock()
	h := c.hooks
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
