package ui

import (
	"image/color"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// TestComposerCursorBlinksInSteps: after focus and input the composer's
// cursor blinks in whole steps (shown, dimmed, shown: a frame each, where
// Fyne's own blink fades in a frame per step of the fade, and never runs
// meanwhile), and stops, solid, blinkTimeout after the last input; a key
// starts it again, focus lost ends it. It also guards the reach into
// Fyne's Entry: if a Fyne version holds the cursor animation otherwise,
// this fails instead of the window silently repainting for the fade.
func TestComposerCursorBlinksInSteps(t *testing.T) {
	test.NewTempApp(t)
	e := newComposerEntry()
	var scheduled []func()
	e.later = func(d time.Duration, f func()) *time.Timer {
		if d != blinkStep {
			t.Errorf("a blink step after %v, want %v", d, blinkStep)
		}
		scheduled = append(scheduled, f)
		return nil
	}
	other := widget.NewEntry()
	w := test.NewTempWindow(t, container.NewVBox(e, other))
	w.Resize(fyne.NewSize(400, 300))
	w.Canvas().Focus(e)

	anim, cursor := cursorAnimation(&e.Entry)
	if anim == nil || cursor == nil {
		t.Fatal("widget.Entry no longer holds cursorAnim{cursor, anim} as Fyne 2.7.1 did: the composer cannot blink its cursor (composer.go)")
	}
	solid := e.Theme().Color(theme.ColorNamePrimary, fyne.CurrentApp().Settings().ThemeVariant())
	fyneBlinks := func() bool { return *anim != nil && *anim != e.parked }
	if fyneBlinks() || e.parked == nil || *anim != e.parked {
		t.Fatal("Fyne's own blink runs in the focused composer")
	}
	if !sameColor(cursor.FillColor, solid) || len(scheduled) != 1 {
		t.Fatalf("after focus: cursor %v, %d steps scheduled; want solid, one", cursor.FillColor, len(scheduled))
	}
	step := func() {
		t.Helper()
		if len(scheduled) != 1 {
			t.Fatalf("%d blink steps scheduled, want 1", len(scheduled))
		}
		next := scheduled[0]
		scheduled = nil
		next()
	}

	// Past the first step the cursor dims, then shows, and so on.
	e.lastInput = time.Now().Add(-blinkStep)
	step()
	if _, _, _, a := cursor.FillColor.RGBA(); a>>8 != cursorDimAlpha {
		t.Fatalf("after a step: cursor %v, want dimmed", cursor.FillColor)
	}
	step()
	if !sameColor(cursor.FillColor, solid) {
		t.Fatalf("after two steps: cursor %v, want shown", cursor.FillColor)
	}
	e.Refresh() // the window refreshes the entry now and then
	if fyneBlinks() {
		t.Fatal("a refresh started Fyne's blink")
	}

	// blinkTimeout after the last input the cursor is solid, for good.
	step()
	e.blinkUntil = time.Now()
	step()
	if !sameColor(cursor.FillColor, solid) || len(scheduled) != 0 {
		t.Fatalf("after the timeout: cursor %v, %d steps scheduled; want solid, none", cursor.FillColor, len(scheduled))
	}

	// A key starts it again, for another blinkTimeout.
	test.Type(e, "a")
	if fyneBlinks() || len(scheduled) != 1 || !e.blinkUntil.After(time.Now()) {
		t.Fatalf("after a key: Fyne's blink %v, %d steps scheduled", fyneBlinks(), len(scheduled))
	}

	// Focus elsewhere: Fyne hides the cursor and the blink ends.
	w.Canvas().Focus(other)
	step()
	if len(scheduled) != 0 || cursor.Visible() {
		t.Fatalf("after focus lost: %d steps scheduled, cursor visible %v", len(scheduled), cursor.Visible())
	}
	w.Canvas().Focus(e)
	if fyneBlinks() || len(scheduled) != 1 {
		t.Fatalf("focused again: Fyne's blink %v, %d steps scheduled", fyneBlinks(), len(scheduled))
	}
}

func sameColor(a, b color.Color) bool {
	r1, g1, b1, a1 := a.RGBA()
	r2, g2, b2, a2 := b.RGBA()
	return r1 == r2 && g1 == g2 && b1 == b2 && a1 == a2
}
