package relay

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
