package relay

import "net/netip"

// TurnOver reports whether conversation id has no turn running: its
// finishTurn has emitted the turn's end (handed it to the committer). The
// external tests wait on it where nothing a client sees says so yet.
func (r *Relay) TurnOver(id string) bool {
	r.mu.Lock()
	c := r.convs[id]
	r.mu.Unlock()
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turn == nil
}

// PendingFrameBytes is what the frames being received hold of the budget,
// in all: the external tests wait on it for a half-sent frame to be read.
func (r *Relay) PendingFrameBytes() int64 {
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	return r.usage.pending
}

// AddressConns is how many HTTP connections from 127.0.0.1 the relay
// counts that are not an open WebSocket (Relay.ConnState).
func (r *Relay) AddressConns() int {
	return r.addrs.count(netip.MustParseAddr("127.0.0.1"))
}

// AllAddressConns is how many HTTP connections that are no WebSocket the
// relay holds, from every address.
func (r *Relay) AllAddressConns() int { return r.addrs.countAll() }

// OnPush calls f after each event's pushes (push.go), with what they did.
func (r *Relay) OnPush(f func(PushReport)) { r.push.done.Store(&f) }
