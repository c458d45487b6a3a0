package ui

import (
	"image/color"

	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/theme"
)

// cardBackground is the rounded background a card is drawn on: a prompt,
// a code block, a plan, the agent's plan, a turn's changes, a notice, the
// Plan mode banner. Every card has the same corners and, where it has a
// border, the same 1-pixel one; its colours come from look, asked again
// on each repaint so that a card that outlives a change of the light or
// dark look (a transcript row recycled, a banner shown again) takes the
// new one.
type cardBackground struct {
	rect *canvas.Rectangle // what the card's stack draws first
	look func() (fill, border color.Color)
}

// newCardBackground makes a card's background in look's current colours;
// a nil border draws none.
func newCardBackground(look func() (fill, border color.Color)) cardBackground {
	fill, border := look()
	r := canvas.NewRectangle(fill)
	r.CornerRadius = theme.InputRadiusSize()
	if border != nil {
		r.StrokeColor = border
		r.StrokeWidth = 1
	}
	return cardBackground{rect: r, look: look}
}

// repaint gives the background look's colours of now.
func (c cardBackground) repaint() {
	c.rect.FillColor, c.rect.StrokeColor = c.look()
	c.rect.Refresh()
}

// amberCard is the look of what Plan mode shows: the banner that says the
// conversation is in Plan mode and the card of the steps it denied.
func amberCard() (fill, border color.Color) {
	p := colors(theme.Current())
	return p.amberBackground, p.amberBorder
}

// userCard is the look of the user's prompts.
func userCard() (fill, border color.Color) {
	return colors(theme.Current()).userBackground, nil
}

// codeCard is the look of code blocks and of the agent's plan.
func codeCard() (fill, border color.Color) {
	return colors(theme.Current()).codeBackground, nil
}

// changesCard is the look of a turn's changes: a code block's, framed, as
// it holds buttons and diffs.
func changesCard() (fill, border color.Color) {
	return colors(theme.Current()).codeBackground, theme.Color(theme.ColorNameSeparator)
}
