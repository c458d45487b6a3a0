package relaytest

import (
	"sync"
	"testing"
	"time"
)

// InputTimers is a relay's question timers (relay.Config.InputTimer) that
// the test fires: a question times out when the test says so, however busy
// the machine, instead of after a real delay that a slow test may overrun
// before it has looked at the open question.
//
//	timers := relaytest.NewInputTimers()
//	srv := relaytest.Start(t, relay.Config{InputTimeout: time.Minute, InputTimer: timers.Start})
//	// … the question is open and seen …
//	timers.Expire(t) // copilot:user_input_timeout follows
type InputTimers struct {
	mu      sync.Mutex
	armed   []*inputTimer // started and neither stopped nor fired, oldest first
	changed chan struct{} // closed and replaced when armed changes
}

type inputTimer struct {
	d      time.Duration
	expire func()
}

// NewInputTimers returns timers none of which is armed.
func NewInputTimers() *InputTimers {
	return &InputTimers{changed: make(chan struct{})}
}

// Start is the relay.Config.InputTimer: it arms a timer and returns its
// stop, which reports whether it disarmed it.
func (m *InputTimers) Start(d time.Duration, expire func()) func() bool {
	it := &inputTimer{d: d, expire: expire}
	m.mu.Lock()
	m.armed = append(m.armed, it)
	m.signalLocked()
	m.mu.Unlock()
	return func() bool { return m.disarm(it) }
}

func (m *InputTimers) signalLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *InputTimers) disarm(it *inputTimer) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, a := range m.armed {
		if a == it {
			m.armed = append(m.armed[:i], m.armed[i+1:]...)
			m.signalLocked()
			return true
		}
	}
	return false
}

// Armed is how many timers are armed: questions open that would time out.
func (m *InputTimers) Armed() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.armed)
}

// Expire fires the oldest armed timer, waiting up to Timeout for one to be
// armed, and returns the duration it was started with. The relay's timeout
// runs on this goroutine, as time.AfterFunc would run it on its own.
func (m *InputTimers) Expire(t testing.TB) time.Duration {
	t.Helper()
	deadline := time.After(Timeout)
	for {
		m.mu.Lock()
		if len(m.armed) > 0 {
			it := m.armed[0]
			m.armed = m.armed[1:]
			m.signalLocked()
			m.mu.Unlock()
			it.expire()
			return it.d
		}
		changed := m.changed
		m.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("relaytest: no question timer armed within %v", Timeout)
			return 0
		}
	}
}
