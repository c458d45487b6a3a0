package ui

import (
	"image/color"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
)

// TestComposerCursorStopsBlinking: the cursor blinks after focus and input
// and stops, solid, blinkTimeout after the last of them; a key starts it
// again. It also guards stopCursorBlink's reach into Fyne's Entry: if a
// Fyne version holds the cursor animation otherwise, this fails instead of
// the window silently blinking (and repainting) forever.
func TestComposerCursorStopsBlinking(t *testing.T) {
	test.NewTempApp(t)
	e := newComposerEntry()
	var scheduled []func()
	e.later = func(d time.Duration, f func()) *time.Timer {
		scheduled = append(scheduled, f)
		return nil
	}
	w := test.NewTempWindow(t, e)
	w.Resize(fyne.NewSize(400, 200))
	w.Canvas().Focus(e)

	anim, cursor := cursorAnimation(&e.Entry)
	if anim == nil || cursor == nil {
		t.Fatal("widget.Entry no longer holds cursorAnim{cursor, anim} as Fyne 2.7.1 did: stopCursorBlink cannot stop the blink (composer.go)")
	}
	if *anim == nil {
		t.Fatal("the focused composer's cursor does not blink")
	}
	if len(scheduled) != 1 {
		t.Fatalf("focus scheduled %d blink checks, want 1", len(scheduled))
	}

	// Before the timeout the check looks again later.
	next := scheduled[0]
	scheduled = nil
	next()
	if *anim == nil || len(scheduled) != 1 {
		t.Fatalf("the blink stopped early (running %v, %d checks)", *anim != nil, len(scheduled))
	}

	// After it the cursor is solid.
	e.lastInput = time.Now().Add(-blinkTimeout)
	next = scheduled[0]
	scheduled = nil
	next()
	if *anim != nil {
		t.Fatal("the cursor still blinks after blinkTimeout without input")
	}
	want := e.Theme().Color(theme.ColorNamePrimary, fyne.CurrentApp().Settings().ThemeVariant())
	if !sameColor(cursor.FillColor, want) {
		t.Fatalf("stopped cursor colour %v, want the solid %v", cursor.FillColor, want)
	}
	if len(scheduled) != 0 {
		t.Fatalf("%d checks scheduled with nothing blinking", len(scheduled))
	}

	// A key starts it again, for another blinkTimeout.
	test.Type(e, "a")
	if *anim == nil {
		t.Fatal("typing did not start the blink again")
	}
	if len(scheduled) != 1 {
		t.Fatalf("typing scheduled %d blink checks, want 1", len(scheduled))
	}
}

func sameColor(a, b color.Color) bool {
	r1, g1, b1, a1 := a.RGBA()
	r2, g2, b2, a2 := b.RGBA()
	return r1 == r2 && g1 == g2 && b1 == b2 && a1 == a2
}
