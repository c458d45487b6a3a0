package jetstream

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

// followKV hands each update of w to each until ctx ends or the watcher's
// channel closes, then stops w. It is the body of every standing watch
// (devices, spend, the relays' leases): one loop, so they agree on how a watch ends. each gets
// the nil entry that marks the end of the initial values too, where the
// watch sends one; it decides what that means.
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
