package history

// UnstoredGuard is implemented by a store whose history outlives the
// process. It keeps the relay's promise that a client never receives, under
// the same epoch, a seq it has already seen (docs/reliability.md, A full
// or failing store).
//
// The relay sends an event only once it is stored, with one exception: when
// Write fails (a full disk), the conversations it touched end with a
// copilot:error and a copilot:idle that cannot be stored either, and that the
// relay sends anyway, so that every window learns what happened. Until
// they are stored (once writes succeed again), clients hold seqs the store
// does not have. Were the relay to stop before that, the next run would
// hand those seqs out again for other events, and a client resuming past
// them would take the new events for ones it already has.
//
// So, before the first such event leaves, the relay calls MarkUnstored, and
// the next open of a marked store gives the history a new epoch: clients
// holding the old one replay from seq 0 (docs/protocol.md, Subscriptions
// and replay). Once every event sent is stored, the relay calls
// ClearUnstored, and a later restart keeps the epoch.
//
// A store that does not implement it gets no such event sent: the relay
// keeps the closing events in memory and sends them once they are stored.
type UnstoredGuard interface {
	// MarkUnstored durably records that clients may hold seqs the store
	// does not have, before it returns. It is called while writes fail
	// because the disk is full, so it must not need new disk space.
	MarkUnstored() error
	// ClearUnstored records that every event sent is stored again.
	ClearUnstored() error
}

// Memory's history ends with the process: the next one starts with a new
// epoch anyway, so there is nothing to record.
var _ UnstoredGuard = (*Memory)(nil)

// MarkUnstored does nothing: a new process gets a new epoch.
func (m *Memory) MarkUnstored() error { return nil }

// ClearUnstored does nothing.
func (m *Memory) ClearUnstored() error { return nil }
