//go:build linux

package ui

import (
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// threadCPU is the CPU time the calling thread has used (RUSAGE_THREAD):
// what a busy machine's other processes do not add to.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// renderCPU is the least CPU time of parsing md into the window's
// segments a few times.
func renderCPU(md string) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := time.Hour
	for range 5 {
		start := threadCPU()
		parseMarkdown(md)
		best = min(best, threadCPU()-start)
	}
	return best
}

// TestMarkdownLinear: the window's markdown (goldmark, then its segments)
// renders hostile text in time linear in its length: the patterns that
// froze the web client for minutes (issue #33). Four times the text may
// take at most ten times as long (linear is four; a quadratic parser
// takes sixteen); three tries, one of which must meet it. The time itself
// (under 100 ms for 128 KB without the race detector) is no unit test's
// business: under -race on a busy machine it is several times that.
func TestMarkdownLinear(t *testing.T) {
	t.Parallel()
	sizes := []int{16, 32, 64, 128}
	// Not "[a](x": goldmark's parseLinkDestination reads to the end of
	// the text for each unclosed destination (3 s at 128 KB here, 15
	// times the time of 32 KB); docs/reliability.md says so.
	for _, unit := range []string{"[", "*a ", "http://[", "*.go ", "<http://a", "**a ", "_a ", "`a ``", "~~a "} {
		var why string
		for range 3 {
			times := make([]time.Duration, len(sizes))
			for k, kb := range sizes {
				times[k] = renderCPU(strings.Repeat(unit, kb*1024/len(unit)+1))
			}
			ratio := float64(times[3]) / float64(max(times[1], 2*time.Millisecond))
			if ratio < 10 {
				why = ""
				break
			}
			why = fmt.Sprintf("%q: 128 KB took %v, %.1f times as long as 32 KB (%v)", unit, times[3], ratio, times)
		}
		if why != "" {
			t.Error(why)
		}
	}
}
