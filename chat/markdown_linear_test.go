//go:build linux

package chat

import (
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// renderCPU is the least CPU time, of the calling thread (what a busy
// machine's other processes do not add to), of rendering md a few times.
func renderCPU(md string) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	threadCPU := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	best := time.Hour
	for range 5 {
		start := threadCPU()
		renderMarkdown(md, 80)
		best = min(best, threadCPU()-start)
	}
	return best
}

// TestMarkdownLinear: the terminal renders hostile text in time linear in
// its length, as the window does (ui's TestMarkdownLinear, which says why
// the bound is what it is): 8 to 128 KB, at most 64 times as long for 16
// times the text; unclosed links ("[a](x") took 200 times as long before
// markdown.Parse escaped them.
func TestMarkdownLinear(t *testing.T) {
	t.Parallel()
	sizes := []int{8, 16, 32, 64, 128}
	for _, unit := range []string{"[", "*a ", "http://[", "*.go ", "[a](x", "[a](<x", "![a](x"} {
		var why string
		for range 3 {
			// The bound needs the ends only; the sizes between are
			// measured for the message of a try that misses it (they were
			// most of the test's time under -race).
			text := func(kb int) string { return strings.Repeat(unit, kb*1024/len(unit)+1) }
			small, big := renderCPU(text(sizes[0])), renderCPU(text(sizes[len(sizes)-1]))
			ratio := float64(big) / float64(max(small, 2*time.Millisecond))
			if ratio < 64 {
				why = ""
				break
			}
			times := make([]time.Duration, len(sizes))
			for k, kb := range sizes {
				times[k] = renderCPU(text(kb))
			}
			why = fmt.Sprintf("%q: 128 KB took %v, %.1f times as long as 8 KB (measured again, %v for 8 to 128 KB)", unit, big, ratio, times)
		}
		if why != "" {
			t.Error(why)
		}
	}
}
