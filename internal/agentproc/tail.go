package agentproc

import (
	"bytes"
	"strings"
	"sync"
)

// tail keeps the last bytes the agent wrote to stderr, for error messages,
// and hands each line to line.
type tail struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	partial []byte // the line being written
	line    func([]byte)
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	t.partial = append(t.partial, b...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		if t.line != nil {
			t.line(t.partial[:i])
		}
		t.partial = t.partial[i+1:]
	}
	if len(t.partial) > t.max {
		t.partial = t.partial[len(t.partial)-t.max:]
	}
	return len(b), nil
}

// Tail returns the last few lines, trimmed, for an error message.
func (t *tail) Tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	lines := strings.Split(s, "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	tail := strings.Join(lines, " | ")
	if len(tail) > 600 {
		tail = "…" + strings.ToValidUTF8(tail[len(tail)-600:], "")
	}
	return tail
}
