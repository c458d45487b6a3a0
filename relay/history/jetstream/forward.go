package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// Forwarded commands: both sides of a command sent to the relay that owns
// its conversation (serving this relay's subject, and Forward).

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

// Forward sends a command to the relay that owns the conversation. It
// stops waiting when the owner's lease lapses: the command is the
// unreachable owner's, which the sender takes over and runs itself.
func (c *Cluster) Forward(ctx context.Context, owner string, cmd []byte) ([]byte, error) {
	lapse := c.lapses.Of(owner)
	// Its lease may have lapsed before the watch could tell lapse.
	if ok, err := c.alive(ctx, owner); err == nil && !ok {
		return nil, fmt.Errorf("jetstream cluster: forward to relay %s: %w (%w)", owner, history.ErrUnreachable, history.ErrLeaseLapsed)
	}
	reply, err := history.ForwardUntilLapse(ctx, lapse, forwardTimeout, func(ctx context.Context) ([]byte, error) {
		reply, err := c.nc.RequestWithContext(ctx, c.cmdSubject(owner), cmd)
		switch {
		case err != nil:
			return nil, err
		case reply.Header.Get(hdrNotOwner) != "":
			// It is stopping: it gives its conversations up in a
			// moment, and the sender routes the command again.
			return nil, history.ErrNotOwner
		}
		return reply.Data, nil
	}, func(err error) bool {
		// Nobody listens for the owner: it is reconnecting (its node
		// died), or dead, and then its lease lapses soon. Asked again
		// for a moment before it is said to be unreachable.
		return errors.Is(err, nats.ErrNoResponders)
	})
	if err != nil {
		return nil, fmt.Errorf("jetstream cluster: forward to relay %s: %w", owner, err)
	}
	return reply, nil
}
