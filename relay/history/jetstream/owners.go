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
