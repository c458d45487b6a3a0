package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"
)

// orderTimeout bounds how long a request waits for the notifications
// before it; past it the request goes on (a notification the SDK could not
// decode never reaches the router, and nothing must wait for it forever).
const orderTimeout = 2 * time.Second

// orderer keeps a request of the agent behind the notifications it sent
// before it. The SDK hands notifications over one at a time, in order, but
// runs each request's handler at once on a goroutine of its own, so a
// permission request can overtake the text and the tool_call that came
// before it on the wire.
//
// The line reader in front of the SDK (elicitReader) counts the
// session/update notifications it passes on (read); the router counts those
// it has queued for their sessions (handled). A request's handler runs only
// after the reader passed the request's line, so once handled reaches what
// read was then, every notification before the request is queued ahead of
// it. Nothing is sent to the agent for it: an extension request the agent
// did not advertise makes some agents print an error each time.
type orderer struct {
	mu      sync.Mutex
	read    uint64
	handled uint64
	waiters []orderWaiter
}

type orderWaiter struct {
	n    uint64
	done chan struct{}
}

// sawLine counts line if it is a session/update notification.
func (o *orderer) sawLine(line []byte) {
	if !bytes.Contains(line, updateName) {
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.Method != updateMethod || len(msg.ID) > 0 {
		return
	}
	o.mu.Lock()
	o.read++
	o.mu.Unlock()
}

const updateMethod = "session/update"

var updateName = []byte(`"` + updateMethod + `"`)

// handledOne counts a notification handed to its session (or dropped as
// no session's) and wakes the requests waiting for it.
func (o *orderer) handledOne() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.handled++
	kept := o.waiters[:0]
	for _, w := range o.waiters {
		if w.n <= o.handled {
			close(w.done)
		} else {
			kept = append(kept, w)
		}
	}
	clear(o.waiters[len(kept):])
	o.waiters = kept
}

// wait returns once every notification read before now has been handed
// over, or when ctx ends, or after orderTimeout.
func (o *orderer) wait(ctx context.Context) {
	o.mu.Lock()
	if o.handled >= o.read {
		o.mu.Unlock()
		return
	}
	w := orderWaiter{n: o.read, done: make(chan struct{})}
	o.waiters = append(o.waiters, w)
	o.mu.Unlock()
	t := time.NewTimer(orderTimeout)
	defer t.Stop()
	select {
	case <-w.done:
	case <-ctx.Done():
	case <-t.C:
		// A notification the SDK could not decode never reaches the
		// router: count what was read as handled, or every later request
		// would wait for it too.
		o.mu.Lock()
		if o.handled < w.n {
			o.handled = w.n - 1
			o.mu.Unlock()
			o.handledOne()
			return
		}
		o.mu.Unlock()
	}
}
