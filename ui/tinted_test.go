package ui

import (
	"image/color"
	"math"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/ui/uitest"
)

// The status bar's hints ("No usage reported yet", "Session totals
// appear…") are drawn in the app theme's hint colour, readable on the
// bar in both looks (at least WCAG's 4.5:1 for text), and its figures in
// the foreground colour. As LowImportance labels (the theme's disabled
// colour) the hints measured 1.2:1 on the light bar and 1.5:1 on the dark.
func TestStatusBarHintsReadable(t *testing.T) {
	a := test.NewTempApp(t)
	for _, variant := range []fyne.ThemeVariant{theme.VariantLight, theme.VariantDark} {
		a.Settings().SetTheme(FixedVariant(theme.DefaultTheme(), variant))
		useAppTheme(a)
		b := newStatusBar()
		w := test.NewTempWindow(t, b.root)
		w.Resize(fyne.NewSize(900, 60))
		bg := a.Settings().Theme().Color(theme.ColorNameHeaderBackground, variant)
		fg := a.Settings().Theme().Color(theme.ColorNameForeground, variant)

		check := func(text string, want color.Color, minContrast float64) {
			t.Helper()
			var got *canvas.Text
			uitest.Walk(b.root, func(o fyne.CanvasObject) bool {
				if x, ok := o.(*canvas.Text); ok && x.Text == text {
					got = x
				}
				return true
			})
			if got == nil {
				t.Fatalf("variant %d: %q is not drawn", variant, text)
			}
			if !sameColor(got.Color, want) {
				t.Errorf("variant %d: %q is drawn in %v, want %v", variant, text, got.Color, want)
			}
			if c := contrast(got.Color, bg); c < minContrast {
				t.Errorf("variant %d: %q has a contrast of %.1f:1 on the bar, want at least %.1f:1", variant, text, c, minContrast)
			}
		}
		hint := a.Settings().Theme().Color(colorNameHint, variant)
		b.setUsage("No usage reported yet", "", true) // as the window does before any usage
		check("No usage reported yet", hint, 4.5)
		check("Session totals appear when the agent session ends", hint, 4.5)
		b.setUsage("Model gpt-5", "Session total: 1 premium request", false)
		check("Model gpt-5", fg, 4.5)
		check("Session total: 1 premium request", fg, 4.5)
	}
}

// contrast is WCAG 2's contrast ratio of fg drawn over bg.
func contrast(fg, bg color.Color) float64 {
	lum := func(c color.Color) float64 {
		r, g, b, _ := c.RGBA()
		ch := func(v uint32) float64 {
			s := float64(v) / 0xffff
			if s <= 0.03928 {
				return s / 12.92
			}
			return math.Pow((s+0.055)/1.055, 2.4)
		}
		return 0.2126*ch(r) + 0.7152*ch(g) + 0.0722*ch(b)
	}
	// fg over bg, for a translucent fg (the theme's disabled colour is).
	over := func(fg, bg color.Color) color.Color {
		fr, fgc, fb, fa := fg.RGBA()
		br, bgc, bb, _ := bg.RGBA()
		mix := func(f, b uint32) uint16 { return uint16(f + b*(0xffff-fa)/0xffff) }
		return color.RGBA64{R: mix(fr, br), G: mix(fgc, bgc), B: mix(fb, bb), A: 0xffff}
	}
	l1, l2 := lum(over(fg, bg)), lum(bg)
	return (max(l1, l2) + 0.05) / (min(l1, l2) + 0.05)
}

// A tool row's state and a reasoning row's preview take their colours from
// the theme by name: hints (a tool stopped with its turn, the collapsed
// reasoning's first line) in the hint colour, as the status bar's.
func TestToolStateAndPreviewColours(t *testing.T) {
	test.NewTempApp(t)
	tv := newToolView(nil)
	for _, tc := range []struct {
		state string
		text  string
		color fyne.ThemeColorName
	}{
		{conversation.ToolRunning, "running…", theme.ColorNameForeground},
		{conversation.ToolApproved, "approved", theme.ColorNameSuccess},
		{conversation.ToolDenied, "denied by plan", theme.ColorNameWarning},
		{conversation.ToolStopped, "stopped with the turn", colorNameHint},
		{conversation.ToolFailed, "failed", theme.ColorNameError},
	} {
		tv.set(0, conversation.Row{Kind: conversation.RowTool, Title: "bash", State: tc.state}, toolClosed)
		if got, c := tv.state.text(), tv.state.seg.Style.ColorName; got != tc.text || c != tc.color {
			t.Errorf("tool state %v: %q in %q, want %q in %q", tc.state, got, c, tc.text, tc.color)
		}
	}
	rv := newReasoningView(nil)
	rv.set(0, conversation.Row{Kind: conversation.RowReasoning, Text: "First I read the code.", Done: true}, toolClosed)
	if got, c := rv.preview.text(), rv.preview.seg.Style.ColorName; got != "First I read the code." || c != colorNameHint {
		t.Errorf("the reasoning preview: %q in %q", got, c)
	}
}
