package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// watchWait bounds one attempt at setting up a watcher and, for a read,
// at receiving its initial values. A watcher is an ordered consumer: one
// asked for while the bucket's stream elects a leader (a bucket another
// relay created a moment ago, or a leader that died) may never be
// answered, or never deliver, and nothing says so. Left unbounded, a
// relay starting beside another on a new cluster waited out its whole
// start-up minute for one. The attempt is abandoned after watchWait and
// made again (leaderCall): a healthy leader answers within milliseconds.
const watchWait = 10 * time.Second

// readKV returns the latest value of every key of kv under filter
// (deletions left out), read with one watcher. An attempt the bucket does
// not answer within the store's watchWait is made again, as a leader's
// request is (leaderCall), until ctx ends or WriteTimeout has passed.
func (s *Store) readKV(ctx context.Context, kv jetstream.KeyValue, filter string) ([]jetstream.KeyValueEntry, error) {
	var out []jetstream.KeyValueEntry
	err := s.leaderCall(ctx, func(context.Context) (err error) {
		out, err = s.readKVOnce(ctx, kv, filter)
		return err
	})
	return out, err
}

// readKVOnce is one attempt of readKV. A watcher that is not set up, or
// has not sent all its initial values, within watchWait gives
// context.DeadlineExceeded, which passes (leaderCall asks again).
func (s *Store) readKVOnce(ctx context.Context, kv jetstream.KeyValue, filter string) ([]jetstream.KeyValueEntry, error) {
	wctx, cancel := context.WithTimeout(ctx, s.opts.watchWait)
	defer cancel()
	w, err := kv.Watch(wctx, filter, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, slowWatch(ctx, wctx, err)
	}
	defer func() {
		if err := w.Stop(); err != nil {
			s.log.Debug("jetstream history: stop a watcher", "bucket", kv.Bucket(), "err", err)
		}
	}()
	var out []jetstream.KeyValueEntry
	for {
		select {
		case <-wctx.Done():
			return nil, slowWatch(ctx, wctx, wctx.Err())
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return nil, slowWatch(ctx, wctx, errWatchLost)
			case e == nil:
				return out, nil // the initial values are all in
			default:
				out = append(out, e)
			}
		}
	}
}

// watchKV sets up a watcher on kv under filter that lives until ctx ends
// or it is stopped. Setting it up is bounded and retried as readKV's read
// is; the watcher's own context is cancelled by its Stop.
func (s *Store) watchKV(ctx context.Context, kv jetstream.KeyValue, filter string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	var out jetstream.KeyWatcher
	err := s.leaderCall(ctx, func(context.Context) error {
		// The watcher is unsubscribed when the context given to Watch
		// ends, so that context is the watcher's whole life, and the
		// bound on setting it up is a timer that cancels it.
		wctx, cancel := context.WithCancel(ctx)
		slow := time.AfterFunc(s.opts.watchWait, cancel)
		w, err := kv.Watch(wctx, filter, opts...)
		if !slow.Stop() {
			// The timer fired: the set-up was abandoned.
			if err == nil {
				_ = w.Stop()
			}
			cancel()
			return slowWatch(ctx, wctx, context.DeadlineExceeded)
		}
		if err != nil {
			cancel()
			return slowWatch(ctx, wctx, err)
		}
		out = stoppingWatcher{KeyWatcher: w, cancel: cancel}
		return nil
	})
	return out, err
}

// stoppingWatcher releases the context of its watcher when it stops.
type stoppingWatcher struct {
	jetstream.KeyWatcher
	cancel context.CancelFunc
}

func (w stoppingWatcher) Stop() error {
	defer w.cancel()
	return w.KeyWatcher.Stop()
}

// errWatchLost is a watcher whose channel closed before its initial
// values were in (its subscription went with the connection's reconnect,
// say). It passes: the read is made again.
var errWatchLost = errors.New("the watcher stopped before its initial values were in")

// slowWatch is an attempt's error: the caller's own ctx ending ends the
// retries; an attempt that ran out of its own time is
// context.DeadlineExceeded, which passes; any other error is err.
func slowWatch(ctx, attempt context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case attempt.Err() != nil:
		return fmt.Errorf("the bucket did not answer within the attempt's time: %w", context.DeadlineExceeded)
	}
	return err
}

// standingWatch is a watch of kv under filter, set up with opts, that
// lasts as long as its owner: the devices', the spend's and the relays'
// leases'. It keeps what set it up, so that follow sets it up again the
// same way.
type standingWatch struct {
	s      *Store
	kv     jetstream.KeyValue
	filter string
	opts   []jetstream.WatchOpt
	w      jetstream.KeyWatcher // the current watcher
}

// startWatch sets up a standing watch (watchKV); its owner then runs its
// follow, or stops it.
func (s *Store) startWatch(ctx context.Context, kv jetstream.KeyValue, filter string, opts ...jetstream.WatchOpt) (*standingWatch, error) {
	w, err := s.watchKV(ctx, kv, filter, opts...)
	if err != nil {
		return nil, err
	}
	return &standingWatch{s: s, kv: kv, filter: filter, opts: opts, w: w}, nil
}

// stop ends a watch its owner does not follow after all.
func (sw *standingWatch) stop() { _ = sw.w.Stop() }

// follow hands each update of the watch to each until ctx ends. A watch
// whose channel closes before then is set up again, with backoff, and
// resumed is called once it is: nats.go gives an ordered consumer up when
// it cannot make it again (its heartbeats missed while the stream changed
// leader, say), and a relay whose watch of the leases had ended quietly
// never heard of a lapse again. What changed in the gap was not told:
// resumed reads again what the caller needs.
func (sw *standingWatch) follow(ctx context.Context, each func(jetstream.KeyValueEntry), resumed func()) {
	s := sw.s
	for {
		followKV(ctx, sw.w, each)
		if ctx.Err() != nil || s.nc.IsClosed() {
			return // its owner stopped, or the connection was closed for good
		}
		s.log.Warn("jetstream history: a watch stopped; watching again", "bucket", sw.kv.Bucket())
		wait := 20 * time.Millisecond
		for sw.w = nil; sw.w == nil; {
			if backOff(ctx, &wait) != nil {
				return
			}
			var err error
			if sw.w, err = s.watchKV(ctx, sw.kv, sw.filter, sw.opts...); err != nil {
				if ctx.Err() != nil || s.nc.IsClosed() {
					return
				}
				s.log.Warn("jetstream history: a watch could not be set up again; trying again", "bucket", sw.kv.Bucket(), "err", err)
			}
		}
		resumed()
	}
}

// followKV hands each update of w to each until ctx ends or the watcher's
// channel closes, then stops w. each gets the nil entry that marks the end
// of the initial values too, where the watch sends one; it decides what
// that means.
func followKV(ctx context.Context, w jetstream.KeyWatcher, each func(jetstream.KeyValueEntry)) {
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			each(e)
		}
	}
}
