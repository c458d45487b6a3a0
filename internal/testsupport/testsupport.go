// Package testsupport holds what the tests of several packages need alike:
// the check that no goroutine outlived the tests, a logger that shows its
// lines when a test fails, a reader of the JSON-lines logs fakes write,
// waits for processes to end, and where the npm-installed agents of the
// end-to-end tests are. It is for tests only.
package testsupport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// leakGrace is how long LeakedGoroutines gives goroutines that are
// finishing (the ACP SDK gives a closed connection's notifications 5 s to
// drain).
const leakGrace = 10 * time.Second

// AfterTests ends a TestMain: when the tests passed (code 0) but goroutines
// running code that match names (see LeakedGoroutines) outlived them, it
// prints their stacks to stderr ("goroutines of what outlived the tests")
// and returns 1; else it returns code.
func AfterTests(code int, what string, match ...string) int {
	return afterTests(os.Stderr, leakGrace, code, what, match...)
}

func afterTests(w io.Writer, grace time.Duration, code int, what string, match ...string) int {
	if code != 0 {
		return code
	}
	if leaked := leakedGoroutines(grace, match); leaked != "" {
		fmt.Fprintf(w, "goroutines of %s outlived the tests:\n%s\n", what, leaked)
		return 1
	}
	return 0
}

// LeakedGoroutines returns the stacks of the goroutines, other than the
// caller's, whose stack holds one of match (a package path such as
// "pilotdesk/session/acp"), after a grace period for those finishing.
func LeakedGoroutines(match ...string) string {
	return leakedGoroutines(leakGrace, match)
}

func leakedGoroutines(grace time.Duration, match []string) string {
	deadline := time.Now().Add(grace)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		// The caller's own goroutine comes first.
		stacks := strings.Split(string(buf), "\n\n")[1:]
		var leaked []string
		for _, g := range stacks {
			for _, m := range match {
				if strings.Contains(g, m) {
					leaked = append(leaked, g)
					break
				}
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Logger returns a logger (all levels) that collects its lines and prints
// them, as "backend log:", when the test fails.
func Logger(t testing.TB) *slog.Logger {
	w := &Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("backend log:\n%s", w.String())
		}
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Buffer is a bytes.Buffer that goroutines may write while the test reads
// it: a log, or a command's output.
type Buffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ReadJSONLines returns the values of the file at path, one JSON value a
// line (a fake's request log); none when there is no file yet. A line
// that is not a T fails the test.
func ReadJSONLines[T any](t testing.TB, path string) []T {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("fake log: %v", err)
		}
		out = append(out, v)
	}
	return out
}
