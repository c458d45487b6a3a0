package relay

import (
	"log/slog"
	"sync"
	"time"
)

// logEvery is a log line that an attacker can cause once per connection
// (a limit refusing it): it is written at most once per every, with the
// count of those left out since the last, so that 10,000 refused
// connections make a few lines, not 10,000 (tools/flood: 9,936 WARN lines
// in 8 s).
type logEvery struct {
	every time.Duration
	mu    sync.Mutex // guards last, left
	last  time.Time
	left  int
}

// warn writes the line, unless one was written less than every ago; then
// it counts it, and the next line written says how many were left out.
func (l *logEvery) warn(log *slog.Logger, msg string, args ...any) {
	l.mu.Lock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.left++
		l.mu.Unlock()
		return
	}
	left := l.left
	l.last, l.left = now, 0
	l.mu.Unlock()
	if left > 0 {
		args = append(args, "alsoSinceLastLine", left)
	}
	log.Warn(msg, args...)
}
