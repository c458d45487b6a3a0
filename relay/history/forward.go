package history

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The sending side of a command forwarded to the relay that owns its
// conversation (Cluster.Forward), as every Cluster does it: the wait for
// the answer ends when the owner's lease lapses, and a relay nobody
// answers for is asked again for a moment.

// ErrLeaseLapsed is why a forward stopped: its owner's lease lapsed. A
// Cluster's Forward wraps it with ErrUnreachable.
var ErrLeaseLapsed = errors.New("its lease lapsed")

// Lapses tells, per relay, that its lease lapsed: the commands forwarded
// to it stop waiting then (ForwardUntilLapse). A relay that died can still
// seem to listen for a while (on NATS its subscription's interest outlives
// it on the other nodes), and a command sent to it would wait out its
// timeout after the conversation had been taken over. The zero value is
// ready to use.
type Lapses struct {
	mu sync.Mutex // guards ch
	// ch has a channel per relay a command is being forwarded to, closed
	// when that relay's lease is seen to lapse (Lapsed).
	ch map[string]chan struct{}
}

// Of is closed when relay's lease lapses.
func (l *Lapses) Of(relay string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ch == nil {
		l.ch = map[string]chan struct{}{}
	}
	ch, ok := l.ch[relay]
	if !ok {
		ch = make(chan struct{})
		l.ch[relay] = ch
	}
	return ch
}

// Lapsed tells of relay's lease lapsing: what waits on Of(relay) goes on.
func (l *Lapses) Lapsed(relay string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ch, ok := l.ch[relay]; ok {
		close(ch)
		delete(l.ch, relay)
	}
}

// Forward's tries at a relay nobody answers for: it is reconnecting, or
// dead, and then its lease lapses soon.
const (
	forwardTries = 8
	forwardPause = 250 * time.Millisecond
)

// ForwardUntilLapse sends a command (send) until it is answered, for up
// to timeout, and stops waiting when lapse is closed (Lapses.Of: the
// owner's lease lapsed). A send that fails with an error for which
// noResponders is true (nobody listens for the owner) is made again, up
// to forwardTries times a forwardPause apart. The owner's lapse, and an
// owner that answers history.ErrNotOwner (it is stopping), give an error
// wrapping ErrUnreachable, for the sender to route the command again;
// the caller wraps every error with the relay it forwarded to.
func ForwardUntilLapse(ctx context.Context, lapse <-chan struct{}, timeout time.Duration,
	send func(context.Context) ([]byte, error), noResponders func(error) bool) ([]byte, error) {
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	defer cancelTimeout()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-lapse:
			cancel(ErrLeaseLapsed)
		case <-ctx.Done():
		}
	}()
	unreachable := func(err error) ([]byte, error) {
		return nil, fmt.Errorf("%w (%w)", ErrUnreachable, err)
	}
	for attempt := 1; ; attempt++ {
		reply, err := send(ctx)
		switch {
		case err == nil:
			return reply, nil
		case errors.Is(context.Cause(ctx), ErrLeaseLapsed):
			return unreachable(ErrLeaseLapsed)
		case errors.Is(err, ErrNotOwner):
			return unreachable(ErrNotOwner)
		case !noResponders(err):
			return nil, err
		case attempt == forwardTries:
			return unreachable(err)
		}
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), ErrLeaseLapsed) {
				return unreachable(ErrLeaseLapsed)
			}
			return nil, err
		case <-time.After(forwardPause):
		}
	}
}
