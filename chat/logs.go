package chat

import (
	"log/slog"
	"strings"
	"sync"
)

// LogSink collects log lines (of the embedded relay and of the client) for
// the REPL to print between its own output, so that a warning neither
// garbles the prompt nor goes unseen. Writers never block: past maxLines
// unprinted lines, further lines are counted and the count is printed.
type LogSink struct {
	mu      sync.Mutex
	lines   []string
	dropped int
	notify  chan struct{}
}

const maxLogLines = 500

// NewLogSink returns an empty sink.
func NewLogSink() *LogSink { return &LogSink{notify: make(chan struct{}, 1)} }

// Handler returns a slog handler writing records of level or above into
// the sink.
func (s *LogSink) Handler(level slog.Leveler) slog.Handler {
	return slog.NewTextHandler(s, &slog.HandlerOptions{
		Level: level,
		// The line shows up at once: its time says nothing more.
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
}

// Write takes one formatted record (slog's text handler writes each record
// with one Write).
func (s *LogSink) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	s.mu.Lock()
	if len(s.lines) >= maxLogLines {
		s.dropped++
	} else {
		s.lines = append(s.lines, line)
	}
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
	return len(p), nil
}

// Take returns the lines not taken yet and how many were dropped since.
func (s *LogSink) Take() ([]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lines, dropped := s.lines, s.dropped
	s.lines, s.dropped = nil, 0
	return lines, dropped
}

// ready is signalled after a Write.
func (s *LogSink) ready() <-chan struct{} {
	if s == nil {
		return nil
	}
	return s.notify
}
