package acp

import (
	"context"
	"sync/atomic"
	"time"
)

// barrierMethod is an extension request no agent knows. ACP has agents
// answer an unknown request "method not found" (and the SDK does so for
// its agents); the answer is all the barrier needs.
const barrierMethod = "_pilotdesk/barrier"

// barrierTimeout bounds one barrier; an agent that does not answer it is
// not asked again.
const barrierTimeout = 2 * time.Second

// orderer keeps a request of the agent behind the notifications it sent
// before it. The SDK hands notifications over one at a time, in order, but
// runs each request's handler at once on a goroutine of its own, so a
// permission request can overtake the text and the tool_call that came
// before it on the wire. The SDK does promise that the answer to one of
// our requests is delivered only after every notification read before that
// answer was handled: a round trip after the agent's request was read is
// thus a barrier behind everything the agent sent before it.
type orderer struct {
	broken atomic.Bool // the agent did not answer a barrier in time
}

// wait returns once every notification the agent sent before now has been
// handed over, or when that cannot be known (the agent does not answer, the
// connection ends, ctx ends).
func (o *orderer) wait(ctx context.Context, p *process) {
	if o.broken.Load() {
		return
	}
	bctx, cancel := context.WithTimeout(ctx, barrierTimeout)
	defer cancel()
	// An error answer is as good as a result: both come after the
	// notifications before them.
	_, _ = p.conn.CallExtension(bctx, barrierMethod, struct{}{})
	if bctx.Err() != nil && ctx.Err() == nil && p.alive() {
		o.broken.Store(true)
		p.log.Warn("acp: the agent does not answer an unknown request; permission requests may overtake the updates before them", "method", barrierMethod)
	}
}
