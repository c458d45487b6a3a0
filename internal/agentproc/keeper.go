package agentproc

import (
	"context"
	"sync"
)

// Handle is a backend's running agent: its Process and the connection the
// backend made over it. Backends use pointers to their process type.
type Handle interface {
	comparable
	Agent() *Process
}

// Keeper keeps the one agent process a backend's sessions share
// (session/copilot, session/acp): Get returns it while it runs and starts
// it, or starts it again after it died, one start at a time; once the
// keeper is closed nothing starts and Stop ends what runs. It is safe for
// concurrent use.
type Keeper[P Handle] struct {
	start     func(ctx context.Context, previous P) (P, error)
	errClosed error

	startMu sync.Mutex // serialises starts; Stop waits for one under way

	mu     sync.Mutex // guards cur and closed; never held while calling out
	cur    P          // the process last started; zero before the first
	closed bool
}

// NewKeeper returns a keeper whose processes start calls: previous is the
// process that died (to say why in the log), or zero on the first start.
// Get fails with errClosed once the keeper is closed.
func NewKeeper[P Handle](start func(ctx context.Context, previous P) (P, error), errClosed error) *Keeper[P] {
	return &Keeper[P]{start: start, errClosed: errClosed}
}

// Get returns the running process, starting one when there is none or the
// last has died. A process that finished starting after Close is stopped.
func (k *Keeper[P]) Get(ctx context.Context) (P, error) {
	var zero P
	k.startMu.Lock()
	defer k.startMu.Unlock()
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return zero, k.errClosed
	}
	p := k.cur
	k.mu.Unlock()
	if p != zero && p.Agent().Alive() {
		return p, nil
	}
	p, err := k.start(ctx, p)
	if err != nil {
		return zero, err
	}
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		p.Agent().Stop()
		return zero, k.errClosed
	}
	k.cur = p
	k.mu.Unlock()
	return p, nil
}

// Current is the process last started (alive or not), or zero.
func (k *Keeper[P]) Current() P {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cur
}

// Close makes Get fail from now on; it reports whether this call closed
// the keeper (false: it was closed already). It stops nothing: the
// backend closes its sessions first, in the process, then calls Stop.
func (k *Keeper[P]) Close() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return false
	}
	k.closed = true
	return true
}

// Closed reports whether Close was called.
func (k *Keeper[P]) Closed() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.closed
}

// Stop waits for a start under way, then stops the current process (stdin
// closed, then SIGTERM and SIGKILL to its group) and reports whether there
// was one.
func (k *Keeper[P]) Stop() bool {
	var zero P
	k.startMu.Lock()
	k.mu.Lock()
	p := k.cur
	k.cur = zero
	k.mu.Unlock()
	k.startMu.Unlock()
	if p == zero {
		return false
	}
	p.Agent().Stop()
	return true
}
