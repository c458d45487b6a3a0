//go:build linux

package ui

import (
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"fyne.io/fyne/v2/widget"
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
// froze the web client for minutes (issue #33), and unclosed inline links,
// on which goldmark itself is quadratic (markdown.Parse). The text
// grows from 8 to 128 KB; sixteen times the text may take at most 64
// times as long (linear is sixteen, a quadratic parser 256; "[a](x" took
// 98 times as long before the fix, 140 ms and 13.7 s on a busy machine);
// three tries, one of which must meet it. The time itself (under 100 ms for 128 KB without the race detector)
// is no unit test's business: under -race on a busy machine it is several
// times that.
func TestMarkdownLinear(t *testing.T) {
	t.Parallel()
	sizes := []int{8, 16, 32, 64, 128}
	for _, unit := range []string{"[", "*a ", "http://[", "*.go ", "<http://a", "**a ", "_a ", "`a ``", "~~a ",
		"[a](x", "[a](<x", "![a](x", "[a](x(", "[a](x)[b](y"} {
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

// 100 unclosed links show as written, none of them a link (the renderer
// drops the escapes that keep goldmark linear on them).
func TestUnclosedLinksShowAsWritten(t *testing.T) {
	md := strings.Repeat("[a](x", 100)
	var shown strings.Builder
	for _, s := range parseMarkdown(md) {
		if _, link := s.(*widget.HyperlinkSegment); link {
			t.Fatalf("a link in the text: %#v", s)
		}
		shown.WriteString(s.Textual())
	}
	if shown.String() != md {
		t.Fatalf("the text shows as %.80q…, want it as written", shown.String())
	}
}
