package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// colorNameHint is the app theme's colour of hint text (palette.subtle).
// A Label has the colours of its importance only, and its LowImportance is
// the theme's disabled colour: 1.2:1 on the light theme's background and
// 1.5:1 on the dark one, too faint to read.
const colorNameHint fyne.ThemeColorName = "pilotdesk-hint"

// tintedText is a line of text in a colour the theme names: the status
// bar's lines, a tool row's state, a reasoning row's preview.
type tintedText struct {
	*widget.RichText
	seg *widget.TextSegment
}

func newTintedText(size fyne.ThemeSizeName, style fyne.TextStyle) *tintedText {
	seg := &widget.TextSegment{Style: widget.RichTextStyle{Inline: true, SizeName: size, TextStyle: style}}
	return &tintedText{RichText: widget.NewRichText(seg), seg: seg}
}

// set shows text in the colour named c, redrawing only on a change.
func (l *tintedText) set(text string, c fyne.ThemeColorName) {
	if l.seg.Text == text && l.seg.Style.ColorName == c {
		return
	}
	l.seg.Text, l.seg.Style.ColorName = text, c
	l.Refresh()
}

// text is what the line shows.
func (l *tintedText) text() string { return l.seg.Text }
