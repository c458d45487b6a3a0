package ui

import (
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
)

// TestThinkingDotsStep: the indicator lights one dot at a time, one step
// per thinkingStep on the window's timer, and stops stepping at Stop, also
// when a step was already scheduled.
func TestThinkingDotsStep(t *testing.T) {
	test.NewTempApp(t)
	var scheduled []func()
	d := newThinkingDots(func(dur time.Duration, f func()) *time.Timer {
		if dur != thinkingStep {
			t.Errorf("a step after %s, want %s", dur, thinkingStep)
		}
		scheduled = append(scheduled, f)
		return nil
	})
	lit := func() int {
		for i, c := range d.dots {
			if _, _, _, a := c.FillColor.RGBA(); a == 0xffff {
				return i
			}
		}
		return -1
	}
	d.Start()
	d.Start() // a second Start does not start a second chain
	if lit() != 0 || len(scheduled) != 1 {
		t.Fatalf("after Start: dot %d lit, %d steps scheduled", lit(), len(scheduled))
	}
	next := scheduled[0]
	scheduled = nil
	next()
	if lit() != 1 || len(scheduled) != 1 {
		t.Fatalf("after a step: dot %d lit, %d steps scheduled", lit(), len(scheduled))
	}
	d.Stop()
	scheduled[0]()
	if lit() != 1 || len(scheduled) != 1 {
		t.Fatalf("a step ran after Stop: dot %d lit, %d steps scheduled", lit(), len(scheduled))
	}
}
