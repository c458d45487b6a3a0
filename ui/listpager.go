package ui

import (
	"context"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// listPager asks the relay for the conversation list a page at a time:
// the first page at start and after a reconnection, when changes may have
// been missed, and each further page once, when the list is scrolled to
// its end. It belongs to the UI goroutine.
type listPager struct {
	// ask asks the relay for the page after cursor ("" the first); the
	// answer comes as events.
	ask func(cursor string)
	// asked is the cursor of the last page asked for, so that scrolling
	// to the end asks for each page once.
	asked string
}

// refresh asks for the first page.
func (p *listPager) refresh() { p.ask("") }

// more asks for the page after cursor, once.
func (p *listPager) more(cursor string) {
	if cursor == "" || cursor == p.asked {
		return
	}
	p.asked = cursor
	p.ask(cursor)
}

// refreshList asks the relay for the first page of its conversations: at
// start and after a reconnection, when changes may have been missed.
// Further pages come as the list is scrolled to its end (listPager.more).
func (w *Window) refreshList() { w.pager.refresh() }

// listPage asks the relay for the page of its conversations after cursor
// (the pager's ask).
func (w *Window) listPage(cursor string) {
	w.enqueue(func(ctx context.Context) {
		if err := w.client.ListPage(ctx, protocol.MaxListLimit, cursor); err != nil {
			w.log.Debug("listing conversations failed", "err", err)
		}
	})
}
