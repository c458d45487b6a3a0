package jetstream

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// leaderCall runs a JetStream API request that a stream's leader (or the
// meta leader) answers. While a new leader is elected (4–9 s after the old
// one died) such a request goes unanswered, and nothing answers it later:
// so each attempt gets attemptTimeout, and the request is sent again, with
// backoff, until it is answered, fails for good, ctx ends, or WriteTimeout
// has passed.
func (s *Store) leaderCall(ctx context.Context, op func(ctx context.Context) error) error {
	deadline := time.Now().Add(s.opts.WriteTimeout)
	wait := 20 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, callTimeout)
		err := op(actx)
		cancel()
		if err == nil || !passing(err) || ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			return err
		}
		if backOff(ctx, &wait) != nil {
			return err
		}
	}
}

// backOff waits *wait before the next attempt of a retry loop, and doubles
// *wait for the one after, up to half a second: one policy for the
// retries of a leader's request and of the device table's and the spend
// ledger's conditional writes (an append paces itself: write.go). It
// returns ctx.Err() at once if ctx ends first.
func backOff(ctx context.Context, wait *time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(*wait):
	}
	*wait = min(2**wait, 500*time.Millisecond)
	return nil
}

// callTimeout bounds one attempt of a leader's request: answered within
// milliseconds by a leader, never by a dead one.
const callTimeout = 2 * time.Second

// errForming is a stream or bucket that another relay has just created
// and that does not answer yet: creating it failed because it exists, and
// looking it up finds nothing while its replicas elect a leader. It passes
// as an election does.
var errForming = errors.New("created by another relay a moment ago, and not answering yet")

// Unavailable reports whether err, from Open or another call, says that
// JetStream did not answer or said it cannot yet (no servers reachable, no
// meta or stream leader, no quorum): a failure that passes when the
// cluster is up, unlike a refused configuration or permission.
func Unavailable(err error) bool {
	return errors.Is(err, nats.ErrNoServers) || passing(err)
}

// passing reports whether a request's error passes with a leader election:
// no answer, nobody listening, a watcher lost while reading, or the server
// saying so.
func passing(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, errForming) || errors.Is(err, errWatchLost) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.Code == 503 || apiErr.ErrorCode == codeNotLeader)
}
