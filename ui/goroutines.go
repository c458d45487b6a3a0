package ui

import (
	"context"
	"strings"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// The window's two goroutines, which make no Fyne calls: pump applies the
// client's events to the store, send runs the requests the UI goroutine
// queues (enqueue), one at a time and in order. Both end with the
// window's context (Close, or SetClient moving to another client); Wait
// waits for them. onUI hands work back to the UI goroutine.

// start starts the goroutines that follow the client, and asks the relay
// for its conversations.
func (w *Window) start() {
	w.wg.Add(2)
	go w.pump()
	go w.send()
	w.enqueue(func(ctx context.Context) {
		// The relay announces every change to the list from now on
		// (copilot:conversation; the client watches again after a
		// reconnect): the window never polls.
		if err := w.client.Watch(ctx, true); err != nil {
			w.log.Debug("watching the conversation list failed", "err", err)
		}
	})
	w.refreshList()
}

// pump applies the client's events to the model.
func (w *Window) pump() {
	defer w.wg.Done()
	events := w.client.Events()
	var live liveTracker
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			// The notification is queued before the event reaches the
			// store, so that it is sent by the frame that shows the
			// event at the latest.
			if n := live.observe(ev); n.kind != notifyNone {
				w.onUI(func() { w.notifier.notify(n) })
			}
			if u, ok := ev.Data.(*client.Unsent); ok {
				// The composer is the UI goroutine's.
				w.onUI(func() { w.unsent(u) })
				continue
			}
			if r, ok := ev.Data.(*client.Refused); ok {
				w.onUI(func() { w.refused(r) })
				continue
			}
			if d, ok := ev.Data.(*protocol.AgentError); ok && live.live[d.ConversationID] && strings.HasPrefix(d.Message, protocol.NoCheckpoint) {
				// Said in the conversation; said once in the window too,
				// as a turn of another conversation may be the one.
				w.onUI(func() { w.showCheckpointsOff(d.Message) })
			}
			w.store.Apply(ev)
			if l, ok := ev.Data.(*protocol.Conversations); ok {
				w.onUI(func() { w.reopen(l) })
			}
		case <-w.ctx.Done():
			return
		}
	}
}

// send runs outgoing requests one at a time, in order, off the UI
// goroutine, so that a slow network never freezes the window.
func (w *Window) send() {
	defer w.wg.Done()
	for {
		select {
		case f := <-w.outbox:
			f(w.ctx)
		case <-w.ctx.Done():
			return
		}
	}
}

func (w *Window) enqueue(f func(context.Context)) {
	if w.client == nil {
		return // nobody to send to (SetClient drops what waits anyway)
	}
	select {
	case w.outbox <- f:
	case <-w.ctx.Done():
	}
}

// onUI runs f on the UI goroutine at the next frame.
func (w *Window) onUI(f func()) {
	select {
	case w.uiq <- f:
		w.requestFrame()
	case <-w.ctx.Done():
	}
}
