package memcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// Forwarded commands: both sides of a command sent to the relay that owns
// its conversation (Forward, and serving it on the owner), as jetstream's
// forward.go does them over NATS.

// forwardTimeout bounds a forwarded command, as jetstream's.
const forwardTimeout = 10 * time.Second

// errNoResponders is a command sent to a relay nobody answers for.
var errNoResponders = errors.New("no responders")

// Forward sends a command to relay owner and returns its answer. It
// stops waiting when the owner's lease lapses; a relay that nobody
// answers for is asked again for a moment (2 s), as on NATS.
func (c *Cluster) Forward(ctx context.Context, owner string, cmd []byte) ([]byte, error) {
	lapse := c.lapses.Of(owner)
	if err := c.lockNet(); err != nil {
		return nil, fmt.Errorf("memcluster: forward to relay %s: %w", owner, err)
	}
	alive := c.aliveNetLocked(owner)
	c.net.mu.Unlock()
	if !alive {
		return nil, fmt.Errorf("memcluster: forward to relay %s: %w (%w)", owner, history.ErrUnreachable, history.ErrLeaseLapsed)
	}
	reply, err := history.ForwardUntilLapse(ctx, lapse, forwardTimeout,
		func(ctx context.Context) ([]byte, error) { return c.send(ctx, owner, cmd) },
		func(err error) bool { return errors.Is(err, errNoResponders) })
	if err != nil {
		return nil, fmt.Errorf("memcluster: forward to relay %s: %w", owner, err)
	}
	return reply, nil
}

// send runs cmd on relay owner and waits for its answer.
func (c *Cluster) send(ctx context.Context, owner string, cmd []byte) ([]byte, error) {
	if err := c.lockNet(); err != nil {
		return nil, err
	}
	target := c.net.members[owner]
	c.net.mu.Unlock()
	if target == nil {
		return nil, errNoResponders
	}
	answer, err := target.serve(cmd)
	if err != nil {
		return nil, err
	}
	select {
	case a := <-answer:
		if a == nil {
			return nil, errNoResponders // cut off before it answered: never comes
		}
		return a, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// serve runs a forwarded command on its own goroutine; the answer comes
// on the channel (nil if the relay was cut off meanwhile).
func (c *Cluster) serve(cmd []byte) (<-chan []byte, error) {
	c.mu.Lock()
	if c.cut {
		c.mu.Unlock()
		return nil, errNoResponders
	}
	if c.stopped {
		c.mu.Unlock()
		return nil, history.ErrNotOwner
	}
	h, ctx := c.hooks, c.ctx
	c.workers.Add(1)
	c.mu.Unlock()
	answer := make(chan []byte, 1)
	go func() {
		defer c.workers.Done()
		cctx, cancel := context.WithTimeout(ctx, forwardTimeout)
		defer cancel()
		a := h.Command(cctx, cmd)
		if c.isCut() {
			a = nil
		}
		answer <- a
	}()
	return answer, nil
}
