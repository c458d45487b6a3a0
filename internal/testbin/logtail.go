package testbin

import (
	"bufio"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"
)

// LogTail collects the lines a process writes (its log on stderr), so a
// test can wait for one and print them all when it fails.
type LogTail struct {
	mu    sync.Mutex
	cond  *sync.Cond
	lines []string
	done  bool
	eof   chan struct{}
}

// NewLogTail reads r until its end in a goroutine of its own.
func NewLogTail(r io.Reader) *LogTail {
	lt := &LogTail{eof: make(chan struct{})}
	lt.cond = sync.NewCond(&lt.mu)
	go func() {
		defer close(lt.eof)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lt.mu.Lock()
			lt.lines = append(lt.lines, sc.Text())
			lt.cond.Broadcast()
			lt.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, r) // a line over 1 MiB: keep the pipe drained
		lt.mu.Lock()
		lt.done = true
		lt.cond.Broadcast()
		lt.mu.Unlock()
	}()
	return lt
}

// WaitDone waits until the reader has reached the end of its input.
func (lt *LogTail) WaitDone() { <-lt.eof }

// WaitFor returns the first line matching re, waiting up to d for it; ok is
// false when the input ended or d passed without one.
func (lt *LogTail) WaitFor(re *regexp.Regexp, d time.Duration) (line string, ok bool) {
	expired := false
	timer := time.AfterFunc(d, func() {
		lt.mu.Lock()
		expired = true
		lt.cond.Broadcast()
		lt.mu.Unlock()
	})
	defer timer.Stop()
	lt.mu.Lock()
	defer lt.mu.Unlock()
	for i := 0; ; {
		for ; i < len(lt.lines); i++ {
			if re.MatchString(lt.lines[i]) {
				return lt.lines[i], true
			}
		}
		if lt.done || expired {
			return "", false
		}
		lt.cond.Wait()
	}
}

// String returns every line read so far.
func (lt *LogTail) String() string {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return strings.Join(lt.lines, "\n")
}
