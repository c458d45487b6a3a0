// Package uitest runs a Fyne test app whose UI goroutine is the test's own
// goroutine: fyne.Do, from any goroutine, queues its function, and the test
// runs the queue (Drain, WaitFor) as a desktop app's event loop would. So a
// window under test takes the same path as in the real app (its goroutines
// schedule frames with fyne.Do) while every widget is touched by one
// goroutine only, as the race detector wants.
package uitest

import (
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

// Loop is the queue of work for the UI goroutine, and the notifications
// the app sent.
type Loop struct {
	mu               sync.Mutex // guards queue and lastNotification
	queue            []func()
	lastNotification *fyne.Notification
	notify           chan struct{} // signalled when work is queued
}

// loopDriver is Fyne's test driver with DoFromGoroutine queued on a Loop.
type loopDriver struct {
	fyne.Driver
	loop *Loop
}

func (d loopDriver) DoFromGoroutine(f func(), wait bool) {
	if !wait {
		d.loop.push(f)
		return
	}
	done := make(chan struct{})
	d.loop.push(func() { defer close(done); f() })
	<-done
}

// loopApp is the test app with the loop's driver.
type loopApp struct {
	fyne.App
	driver loopDriver
}

func (a loopApp) Driver() fyne.Driver { return a.driver }

// SendNotification records n (Fyne's own assertion helper wants its own
// app type as the current app) and sends it as the test app does.
func (a loopApp) SendNotification(n *fyne.Notification) {
	l := a.driver.loop
	l.mu.Lock()
	l.lastNotification = n
	l.mu.Unlock()
	a.App.SendNotification(n)
}

// AssertNotificationSent runs f and checks that it sent n (title and
// content), or nothing when n is nil.
func (l *Loop) AssertNotificationSent(t testing.TB, n *fyne.Notification, f func()) {
	t.Helper()
	l.mu.Lock()
	l.lastNotification = nil
	l.mu.Unlock()
	f()
	l.mu.Lock()
	got := l.lastNotification
	l.mu.Unlock()
	switch {
	case n == nil && got != nil:
		t.Errorf("notification %q: %q sent, want none", got.Title, got.Content)
	case n != nil && got == nil:
		t.Errorf("no notification sent, want %q: %q", n.Title, n.Content)
	case n != nil && (got.Title != n.Title || got.Content != n.Content):
		t.Errorf("notification %q: %q, want %q: %q", got.Title, got.Content, n.Title, n.Content)
	}
}

// NewApp returns a test app (as test.NewTempApp) whose fyne.Do calls queue
// on the returned Loop. At the end of the test the queue is dropped.
func NewApp(t testing.TB) (fyne.App, *Loop) {
	return Wrap(t, test.NewTempApp(t))
}

// Wrap makes inner, an app on Fyne's test driver (test.NewApp, or
// app.New under the ci build tag), the current app with its fyne.Do calls
// queued on the returned Loop. At the end of the test inner is current
// again.
func Wrap(t testing.TB, inner fyne.App) (fyne.App, *Loop) {
	l := &Loop{notify: make(chan struct{}, 1)}
	a := loopApp{App: inner, driver: loopDriver{Driver: inner.Driver(), loop: l}}
	fyne.SetCurrentApp(a)
	t.Cleanup(func() {
		if fyne.CurrentApp() == fyne.App(a) {
			fyne.SetCurrentApp(inner)
		}
	})
	return a, l
}

func (l *Loop) push(f func()) {
	l.mu.Lock()
	l.queue = append(l.queue, f)
	l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

// Drain runs every queued function, and what they queue in turn, on the
// calling goroutine, until the queue is empty. It reports whether it ran
// anything.
func (l *Loop) Drain() bool {
	ran := false
	for {
		l.mu.Lock()
		q := l.queue
		l.queue = nil
		l.mu.Unlock()
		if len(q) == 0 {
			return ran
		}
		for _, f := range q {
			f()
		}
		ran = true
	}
}

// WaitFor runs the loop until cond holds, failing the test after timeout
// with what and, when describe is not nil, what it says.
func (l *Loop) WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		l.Drain()
		if cond() {
			return
		}
		select {
		case <-l.notify:
		case <-time.After(20 * time.Millisecond):
			// Work that reaches the window without a fyne.Do (a sender's
			// outcome) is seen by polling now and then.
		case <-deadline:
			msg := ""
			if describe != nil {
				msg = describe()
			}
			t.Fatalf("timed out waiting for %s\n%s", what, msg)
		}
	}
}
