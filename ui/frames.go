package ui

import (
	"context"
	"sync"
	"time"

	"fyne.io/fyne/v2"
)

// frameScheduler paces the window's redraws and runs its timers. A change
// asks for a frame (request); the frame comes after the frame interval, so
// that a burst of deltas costs one redraw, and while a reply streams it
// also keeps the stream interval after the one before, so that a steady
// stream is drawn at that pace. Every timer it starts runs its function on
// the UI goroutine, and none runs once the window's context ends (the
// window closed, or moved to another relay's client): nothing the window
// scheduled outlives it.
//
// The client's goroutines and timers call it as well as the UI goroutine:
// mu guards every field but draw.
type frameScheduler struct {
	// draw draws a frame on the UI goroutine; set once, before any request.
	draw func()

	mu        sync.Mutex
	ctx       context.Context // the window's (restart replaces it)
	interval  time.Duration   // Options.FrameInterval
	stream    time.Duration   // Options.StreamInterval
	scheduled bool            // a frame is on its way
	last      time.Time       // when the last frame began
	paced     bool            // a reply streams into view: frames keep stream apart
}

// restart ties the scheduler to the window's new context, with its
// intervals. A frame asked for under the old context draws nothing once
// that is cancelled, so none is on its way any more.
func (f *frameScheduler) restart(ctx context.Context, interval, stream time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctx, f.interval, f.stream = ctx, interval, stream
	f.scheduled = false
}

// request schedules one frame for everything that changed until it comes.
func (f *frameScheduler) request() {
	f.mu.Lock()
	if f.scheduled {
		f.mu.Unlock()
		return
	}
	f.scheduled = true
	d := f.interval
	if f.paced {
		d = max(d, f.stream-time.Since(f.last))
	}
	f.mu.Unlock()
	f.later(d, f.draw)
}

// drawing marks the frame asked for as begun: a change from now on asks
// for another.
func (f *frameScheduler) drawing() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scheduled = false
	f.last = time.Now()
}

// pace says whether a reply streams into view (the frames then keep the
// stream interval apart).
func (f *frameScheduler) pace(paced bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paced = paced
}

// later runs fn on the UI goroutine after d (at the next chance when d is
// 0), unless the window's context has ended by then.
func (f *frameScheduler) later(d time.Duration, fn func()) *time.Timer {
	f.mu.Lock()
	ctx := f.ctx
	f.mu.Unlock()
	return time.AfterFunc(d, func() {
		if ctx.Err() != nil {
			return
		}
		fyne.Do(func() {
			if ctx.Err() == nil {
				fn()
			}
		})
	})
}

// requestFrame schedules one redraw (frameScheduler.request).
func (w *Window) requestFrame() { w.frames.request() }

// later runs f on the UI goroutine after d, unless the window has been
// closed, or moved to another client, by then (frameScheduler.later).
func (w *Window) later(d time.Duration, f func()) *time.Timer { return w.frames.later(d, f) }

// frame draws what changed (the scheduler's draw).
func (w *Window) frame() {
	w.frames.drawing()
	w.sync(false)
	w.settleLayout()
}

// minSizer is the canvas of Fyne's GL driver (its common.Canvas), which
// lays out the parents of every object whose minimum size changed.
type minSizer interface{ EnsureMinSize() bool }

// settleLayout lays out, now, what the changes just made need laid out,
// so that the paint that follows has nothing left to lay out. Fyne 2.7.1
// does it at the start of its paint (EnsureMinSize) otherwise, and that
// layout marks the window dirty again while it is painted: a
// fyne.Container's Move repaints even to the place it is at, and a
// scroller's layout refreshes its bar, so a streaming row that grew, or
// a list whose content grew, had every frame painted twice, the second
// identical. Laid out here, on the UI goroutine before the paint, the
// same refreshes only ask for the frame that is coming anyway.
// (The test driver's canvas has no such pass: it lays out as it goes.)
func (w *Window) settleLayout() {
	c, ok := w.win.Canvas().(minSizer)
	if !ok {
		return
	}
	if c.EnsureMinSize() {
		// The content's minimum size changed, which the paint would have
		// seen and fitted the window to (grown it, or let it shrink):
		// SetFixedSize fits it the same way.
		w.win.SetFixedSize(w.win.FixedSize())
	}
}
