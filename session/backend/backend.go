// Package backend holds what the agent backends of session.Agent that run an
// agent process (session/copilot, session/acp) share above that process
// (internal/agentproc keeps the process itself): their time limits and
// the way a turn and a close treat the caller's context, a session's turns
// one at a time until it is closed, and an Agent's Close of its sessions.
package backend

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Limits are the time limits of a backend, part of its Options. A zero
// field takes its default (WithDefaults).
type Limits struct {
	// StartTimeout bounds starting the agent and its handshake (a first
	// run may unpack or install itself: seconds). Each backend has its
	// own default.
	StartTimeout time.Duration
	// StopGrace is how long a stopping agent gets after its stdin closes
	// before SIGTERM, and again before SIGKILL. Default 5s.
	StopGrace time.Duration
	// AbortTimeout bounds waiting for the agent to end a cancelled turn.
	// Default 10s.
	AbortTimeout time.Duration
	// CloseTimeout bounds closing a session (and waiting for what the
	// agent reports then) when the caller's context has no deadline.
	// Default 10s.
	CloseTimeout time.Duration
}

// WithDefaults fills in the limits left zero (or negative); start is the
// backend's default StartTimeout.
func (l Limits) WithDefaults(start time.Duration) Limits {
	if l.StartTimeout <= 0 {
		l.StartTimeout = start
	}
	if l.StopGrace <= 0 {
		l.StopGrace = 5 * time.Second
	}
	if l.AbortTimeout <= 0 {
		l.AbortTimeout = 10 * time.Second
	}
	if l.CloseTimeout <= 0 {
		l.CloseTimeout = 10 * time.Second
	}
	return l
}

// CloseContext bounds ctx by the limits' CloseTimeout when it has no
// deadline of its own: a session's Close must end even when the agent does
// not answer.
func (l Limits) CloseContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, l.CloseTimeout)
}

// TurnErr is what a turn reports for err, a failure to get its agent or
// session ready: ctx's own error once ctx ended (the turn was stopped, it
// is not the agent's failure), else err.
func TurnErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// Turns is a session's turn lock and its closed mark: the session's turns
// run one at a time, and none once it is closed.
type Turns struct {
	run    sync.Mutex // held for a whole turn
	closed atomic.Bool
}

// Begin waits for the running turn to end and begins the next one; once
// the session is closed it fails with errClosed. The caller defers end.
func (t *Turns) Begin(errClosed error) (end func(), err error) {
	t.run.Lock()
	if t.closed.Load() {
		t.run.Unlock()
		return nil, errClosed
	}
	return t.run.Unlock, nil
}

// TryBegin begins work that must not overlap a turn (putting an idle
// session to sleep) unless a turn runs: then ok is false.
func (t *Turns) TryBegin() (end func(), ok bool) {
	if !t.run.TryLock() {
		return nil, false
	}
	return t.run.Unlock, true
}

// Close marks the session closed and reports whether this call did (false:
// it was closed already). A turn already running goes on.
func (t *Turns) Close() bool { return t.closed.CompareAndSwap(false, true) }

// Closed reports whether the session is closed.
func (t *Turns) Closed() bool { return t.closed.Load() }

// CloseAll closes the sessions of an Agent being closed, all at once (each
// waits for its agent's answer, at most its CloseTimeout), and waits for
// every one; failed hears each that failed (from several goroutines at
// once). The Agent closes its keeper
// first, so that no session opens meanwhile, and stops its process after:
// the sessions close in it.
func CloseAll[S interface{ Close(context.Context) error }](sessions []S, failed func(s S, err error)) {
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(func() {
			if err := s.Close(context.Background()); err != nil {
				failed(s, err)
			}
		})
	}
	wg.Wait()
}
