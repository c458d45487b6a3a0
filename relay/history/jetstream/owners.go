package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// Owner records: who runs each conversation, claimed by compare-and-set
// against the relays' leases, released, and dropped.

// Claim makes this relay the owner of a conversation nobody live owns.
//
// The lease must hold when the owner record is written, not only when the
// claim began: a relay learns that its lease lapsed only at its next
// renewal, so one whose renewals are late (a loaded machine, a partition
// the server has already timed its key out for) still trusts it. Its claim
// would be made under a dead id: the conversation would be anyone's at
// once, another relay would claim and write it, and this one, believing it
// owns it (an owner follows nothing), would serve a history cut where it
// last wrote. So each write of the record must be acknowledged before the
// lease could have lapsed at the server, as this relay counts it from the
// renewal it sent last less a margin (leaseUntil); a write acknowledged
// later is taken back, and the claim fails with history.ErrNoLease (the
// relay's takeovers try again).
func (c *Cluster) Claim(ctx context.Context, id string) (owner, previous string, err error) {
	key := token(id)
	self, _, err := c.leaseUntil()
	if err != nil {
		// Claimed under an id whose lease lapsed, the conversation would
		// be anyone's at once (TestChaos quorum-loss: a replay ended at
		// seq 289 of 1037). It claims again once it has announced itself
		// again.
		return "", "", fmt.Errorf("jetstream cluster: claim %q: %w", id, err)
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
			rev, err := c.writeClaim(ctx, key, self, func(wctx context.Context) (uint64, error) {
				return c.owners.Create(wctx, key, []byte(self))
			})
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
			if _, _, err := c.leaseUntil(); err != nil {
				return "", "", fmt.Errorf("jetstream cluster: claim %q: %w", id, err)
			}
			c.noteClaim(key, e.Revision())
			return self, "", nil
		}
		if live {
			return cur, cur, nil
		}
		rev, err := c.writeClaim(ctx, key, self, func(wctx context.Context) (uint64, error) {
			return c.owners.Update(wctx, key, []byte(self), e.Revision())
		})
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

// leaseUntil returns this relay's id and when it stops trusting its lease:
// the lease after the renewal it sent last (the server's TTL started
// later), less the margin; history.ErrNoLease once that has passed or the
// lease lapsed.
func (c *Cluster) leaseUntil() (self string, until time.Time, err error) {
	c.mu.Lock()
	self, ok, until := c.id, c.leaseOK, c.renewed.Add(c.lease-c.margin())
	c.mu.Unlock()
	if !ok {
		return "", time.Time{}, history.ErrNoLease
	}
	if left := time.Until(until); left <= 0 {
		return "", time.Time{}, fmt.Errorf("the lease was last renewed %v ago: %w", (c.lease - c.margin() - left).Round(time.Millisecond), history.ErrNoLease)
	}
	return self, until, nil
}

// writeClaim writes the owner record naming self (write) so that it is
// acknowledged before the lease could have lapsed (leaseUntil): the
// write's deadline is the lease's, and a write acknowledged later all the
// same is taken back (a record left there if that fails names a dead
// relay, anyone's, or this live one, whose next claim finds it its own).
// Either way the claim fails with history.ErrNoLease. A lost race's error
// (lostClaim) is returned as it is.
func (c *Cluster) writeClaim(ctx context.Context, key, self string, write func(context.Context) (uint64, error)) (uint64, error) {
	cur, until, err := c.leaseUntil()
	if err != nil {
		return 0, err
	}
	if cur != self {
		return 0, fmt.Errorf("the relay announced itself again, as %s: %w", cur, history.ErrNoLease)
	}
	wctx, cancel := context.WithDeadline(ctx, until)
	rev, err := write(wctx)
	cancel()
	switch {
	case err == nil && !time.Now().Before(until):
		if derr := c.dropOwner(ctx, key, rev); derr != nil {
			c.log.Debug("jetstream cluster: take back a claim acknowledged after the lease", "key", key, "err", derr)
		}
		return 0, fmt.Errorf("acknowledged after the lease could have lapsed: %w", history.ErrNoLease)
	case err != nil && lostClaim(err):
	case err != nil && ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded):
		return 0, fmt.Errorf("not acknowledged before the lease could have lapsed (%v): %w", err, history.ErrNoLease)
	}
	return rev, err
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
