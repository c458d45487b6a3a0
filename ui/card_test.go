package ui

import (
	"image/color"
	"testing"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"github.com/pilotdesk/pilotdesk/conversation"
)

// TestCardsFollowTheLook: a card drawn in the light look and shown again
// after the look turned dark (a recycled row) is painted in the dark
// look's colours, keeping its rounded corners and, where it has one, its
// 1-pixel border; a prompt's and the agent's plan's card, through their
// views, as the transcript shows them.
func TestCardsFollowTheLook(t *testing.T) {
	a := test.NewTempApp(t)
	a.Settings().SetTheme(FixedVariant(theme.DefaultTheme(), theme.VariantLight))
	user := newUserView()
	plan := newAgentPlanView()
	cards := []struct {
		name   string
		bg     cardBackground
		show   func()
		fill   func(palette) color.Color
		border func(palette) color.Color // nil: none
	}{
		{"prompt", user.bg, func() { user.set(conversation.Row{Kind: conversation.RowUser, Text: "hi"}) },
			func(p palette) color.Color { return p.userBackground }, nil},
		{"agent's plan", plan.bg, func() { plan.set(conversation.Row{Kind: conversation.RowAgentPlan}) },
			func(p palette) color.Color { return p.codeBackground }, nil},
		{"changes", newCardBackground(changesCard), nil,
			func(p palette) color.Color { return p.codeBackground },
			func(palette) color.Color { return theme.Color(theme.ColorNameSeparator) }},
		{"plan", newCardBackground(amberCard), nil,
			func(p palette) color.Color { return p.amberBackground },
			func(p palette) color.Color { return p.amberBorder }},
	}
	check := func(look string) {
		t.Helper()
		p := colors(theme.Current())
		for _, c := range cards {
			r := c.bg.rect
			if !sameColor(r.FillColor, c.fill(p)) {
				t.Errorf("%s, %s: filled %v, want %v", look, c.name, r.FillColor, c.fill(p))
			}
			if r.CornerRadius != theme.InputRadiusSize() {
				t.Errorf("%s, %s: corner radius %v, want %v", look, c.name, r.CornerRadius, theme.InputRadiusSize())
			}
			switch {
			case c.border == nil && r.StrokeWidth != 0:
				t.Errorf("%s, %s: a border %v wide, want none", look, c.name, r.StrokeWidth)
			case c.border != nil && (r.StrokeWidth != 1 || !sameColor(r.StrokeColor, c.border(p))):
				t.Errorf("%s, %s: border %v, %v wide, want %v, 1 wide", look, c.name, r.StrokeColor, r.StrokeWidth, c.border(p))
			}
		}
	}
	for _, c := range cards {
		if c.show != nil {
			c.show()
		}
	}
	check("light")
	a.Settings().SetTheme(FixedVariant(theme.DefaultTheme(), theme.VariantDark))
	if sameColor(colors(theme.Current()).userBackground, user.bg.rect.FillColor) {
		t.Fatal("the dark look's prompt colour is the light one's: the test shows nothing")
	}
	for _, c := range cards {
		if c.show != nil {
			c.show()
		} else {
			c.bg.repaint()
		}
	}
	check("dark")
}
