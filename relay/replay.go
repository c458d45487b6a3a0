package relay

import (
	"errors"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// replayRetry are the waits before a replay reads the history again after
// a read failed, from the last event it sent: a store that cannot answer
// for a moment (a JetStream node rejoining its cluster, a stream's leader
// being elected: "JetStream system temporarily unavailable") is asked for
// about 15 s before the client is told to come back, where the first
// failure closed its connection.
var replayRetry = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}

var (
	errStopReplay  = errors.New("replay done")
	errPauseReplay = errors.New("the replay waits for the socket to drain")
	errConnClosed  = errors.New("connection closed")
)

// replayStored sends cn the stored events after rp.since up to rp.upTo, at
// the pace its socket drains. It reads the history in stretches: a
// Store.Events call goes on while the connection has room (replayWindow)
// and stops when it has none; the next starts after the last event sent,
// once the socket has drained. So a replaying connection holds about
// replayWindow of the history (and the store a page while it reads),
// however long the conversation and however slow the client, where reading
// it in one call would keep the store's page and the queue's 64 MiB alive
// for a client that never reads.
func (c *conversation) replayStored(cn *conn, rp *replay) {
	since := rp.since
	failed := 0 // reads failed in a row
	for since < rp.upTo {
		if !cn.replayRoom() {
			return
		}
		err := c.r.store.Events(cn.ctx, c.id, since, func(e history.Event) error {
			if e.Seq > rp.upTo {
				return errStopReplay
			}
			frame := e.Frame
			if len(frame) > protocol.MaxFrameBytes {
				// Stored by an older relay, which did not bound frames.
				var err error
				if frame, err = refitStored(frame); err != nil {
					c.r.log.Error("relay: a stored event over the frame limit is left out of a replay", "conversationId", c.id, "seq", e.Seq, "err", err)
					since = e.Seq
					return nil
				}
			}
			if !cn.enqueueWait(frame) {
				return errConnClosed
			}
			since = e.Seq
			if cn.replayFull() {
				return errPauseReplay
			}
			return nil
		})
		switch {
		case errors.Is(err, errPauseReplay):
			failed = 0
			continue
		case err == nil, errors.Is(err, errStopReplay), errors.Is(err, errConnClosed), cn.ctx.Err() != nil:
			return // the history ends before upTo only when the conversation was deleted meanwhile
		case failed < len(replayRetry):
			c.r.log.Warn("relay: a replay could not read the history; reading again", "conversationId", c.id, "after", since, "in", replayRetry[failed], "err", err)
			select {
			case <-cn.ctx.Done():
				return
			case <-time.After(replayRetry[failed]):
			}
			failed++
		default:
			c.r.log.Error("relay: replay from the history store failed", "conversationId", c.id, "err", err)
			cn.closeWith(websocket.StatusInternalError, "could not read the history: try again", false)
			return
		}
	}
}
