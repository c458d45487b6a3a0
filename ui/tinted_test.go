package ui

import (
	"image/color"
	"slices"
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
// A spent budget's words are in the error colour, and only they.
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
			if c := contrastRatio(got.Color, bg); c < minContrast {
				t.Errorf("variant %d: %q has a contrast of %.1f:1 on the bar, want at least %.1f:1", variant, text, c, minContrast)
			}
		}
		hint := a.Settings().Theme().Color(colorNameHint, variant)
		b.setUsage("No usage reported yet", "", true) // as the window does before any usage
		check("No usage reported yet", hint, 4.5)
		check("Session totals appear when the agent session ends", hint, 4.5)
		// A spent budget is in the error colour; the hint beside it is
		// still a hint, not an error.
		b.setBudget("budget spent: 17 of 10 credits in 30 days", true)
		check("Session totals appear when the agent session ends", hint, 4.5)
		check("  ·  budget spent: 17 of 10 credits in 30 days", a.Settings().Theme().Color(theme.ColorNameError, variant), 4.5)
		b.setBudget("budget: 2 of 10 credits spent in 30 days, 8 left", false)
		check("  ·  budget: 2 of 10 credits spent in 30 days, 8 left", fg, 4.5)
		b.setUsage("Model gpt-5", "Session total: 1 premium request", false)
		check("Model gpt-5", fg, 4.5)
		check("Session total: 1 premium request", fg, 4.5)
	}
}

// TestStatusColoursReadable: the words the window draws in a status
// colour ("Completed", plan mode, an error, a tool's state) and links read
// at WCAG's 4.5:1 on the background and the status bar, in both looks, and
// a button filled with a status colour (Reject, Stop) keeps its label
// readable. Fyne's default light theme draws success at 1.5:1, warning
// at 2.2:1 and error at 3.7:1; its dark one draws links at 4.0:1. A theme
// whose own colours read keeps them.
func TestStatusColoursReadable(t *testing.T) {
	a := test.NewTempApp(t)
	on := map[fyne.ThemeColorName]fyne.ThemeColorName{
		theme.ColorNameSuccess: theme.ColorNameForegroundOnSuccess,
		theme.ColorNameWarning: theme.ColorNameForegroundOnWarning,
		theme.ColorNameError:   theme.ColorNameForegroundOnError,
	}
	for _, variant := range []fyne.ThemeVariant{theme.VariantLight, theme.VariantDark} {
		base := FixedVariant(theme.DefaultTheme(), variant)
		a.Settings().SetTheme(base)
		useAppTheme(a)
		th := a.Settings().Theme()
		for _, n := range []fyne.ThemeColorName{theme.ColorNameSuccess, theme.ColorNameWarning, theme.ColorNameError, theme.ColorNameHyperlink} {
			c := th.Color(n, variant)
			for _, bg := range []fyne.ThemeColorName{theme.ColorNameBackground, theme.ColorNameHeaderBackground} {
				if r := contrastRatio(c, th.Color(bg, variant)); r < minTextContrast {
					t.Errorf("variant %d: %s text on %s: %.2f:1, want at least %.1f:1", variant, n, bg, r, minTextContrast)
				}
			}
			if fg, ok := on[n]; ok {
				if r := contrastRatio(th.Color(fg, variant), c); r < minTextContrast {
					t.Errorf("variant %d: a %s button's label: %.2f:1, want at least %.1f:1", variant, n, r, minTextContrast)
				}
			}
			if own := base.Color(n, variant); contrastRatio(own, base.Color(theme.ColorNameBackground, variant)) >= minTextContrast && !sameColor(c, own) {
				t.Errorf("variant %d: %s: the theme's readable %v was replaced by %v", variant, n, own, c)
			}
		}
	}
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
		if got, want := tv.state.parts(), []tint{{tc.text, tc.color}}; !slices.Equal(got, want) {
			t.Errorf("tool state %v: %q, want %q", tc.state, got, want)
		}
	}
	rv := newReasoningView(nil)
	rv.set(0, conversation.Row{Kind: conversation.RowReasoning, Text: "First I read the code.", Done: true}, toolClosed)
	if got, want := rv.preview.parts(), []tint{{"First I read the code.", colorNameHint}}; !slices.Equal(got, want) {
		t.Errorf("the reasoning preview: %q, want %q", got, want)
	}
}
