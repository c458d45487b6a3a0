package relay

import (
	"context"
	"time"

	"github.com/coder/websocket"
)

// Drain readies a relay of a cluster to stop without interrupting anyone
// (a rolling deploy: docs/operations.md). From its call /healthz answers
// 503 and new WebSocket connections are refused, so a balancer sends
// clients elsewhere; every client connection is closed with 1012 (service
// restart), so clients reconnect at once, to another relay, and resume with
// sinceSeq; a conversation it owns with no turn running is handed over
// (this relay lets it go and gives up its owner record: the next command
// anywhere claims it), and so is each other one as soon as its turn ends
// (a turn waiting on a question is still running). Commands other relays
// forward meanwhile run here only on a conversation whose turn still runs
// here; for the others the sender is told to look for the owner again.
// Drain returns once it owns nothing, or when ctx ends (the drain
// timeout); Close follows. A single relay has nothing to hand over and
// returns at once.
func (r *Relay) Drain(ctx context.Context) {
	if r.cluster == nil {
		return
	}
	r.draining.Store(true)
	r.log.Info("relay: draining: clients move to other relays, and conversations are handed over as their turns end")
	r.mu.Lock()
	for c := range r.conns {
		c.closeWith(websocket.StatusServiceRestart, "relay draining: reconnect to another relay", true)
	}
	r.mu.Unlock()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for start := time.Now(); ; {
		busy := 0
		for _, c := range r.allConversations() {
			if !r.handOff(ctx, c) {
				busy++
			}
		}
		if busy == 0 {
			r.log.Info("relay: drained: every conversation handed over", "took", time.Since(start).Round(time.Millisecond))
			return
		}
		select {
		case <-ctx.Done():
			r.log.Warn("relay: the drain timed out with turns still running; they are aborted", "turns", busy)
			return
		case <-tick.C:
		}
	}
}

// draining reports whether Drain has begun.
func (r *Relay) isDraining() bool { return r.draining.Load() }

// handOff lets a conversation this relay owns go once it is idle (no turn,
// everything it emitted stored and sent, no failed write waiting), and gives
// up its owner record. It reports whether the relay no longer owns it.
func (r *Relay) handOff(ctx context.Context, c *conversation) bool {
	c.mu.Lock()
	switch {
	case !c.own.here || c.deleted.Load():
		c.mu.Unlock()
		return true
	case c.turn != nil || c.lastSeq != c.sentSeq || c.failure.failed:
		c.mu.Unlock()
		return false
	}
	c.loseLocked()
	c.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r.cluster.Release(rctx, c.id)
	return true
}
