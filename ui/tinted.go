package ui

import (
	"slices"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// colorNameHint is the app theme's colour of hint text (palette.subtle).
// A Label has the colours of its importance only, and its LowImportance is
// the theme's disabled colour: 1.2:1 on the light theme's background and
// 1.5:1 on the dark one, too faint to read.
const colorNameHint fyne.ThemeColorName = "pilotdesk-hint"

// colorNameBanner is the app theme's colour of the Plan mode banner's text
// (palette.amberText), which reads on the banner's amber card.
const colorNameBanner fyne.ThemeColorName = "pilotdesk-banner"

// tintedText is a line of text in colours the theme names: the status
// bar's lines, a tool row's state, a reasoning row's preview.
type tintedText struct {
	*widget.RichText
	size  fyne.ThemeSizeName
	style fyne.TextStyle
}

// tint is a part of a tintedText: its text and the name of its colour.
type tint struct {
	text  string
	color fyne.ThemeColorName
}

func newTintedText(size fyne.ThemeSizeName, style fyne.TextStyle) *tintedText {
	l := &tintedText{RichText: widget.NewRichText(), size: size, style: style}
	// The line is the widget the window holds: without this, a Refresh
	// reached the RichText's own renderer, not the one drawn, and a part
	// added after the line was first drawn never showed.
	l.ExtendBaseWidget(l)
	l.setParts(tint{})
	return l
}

// set shows text in the colour named c, redrawing only on a change.
func (l *tintedText) set(text string, c fyne.ThemeColorName) { l.setParts(tint{text, c}) }

// setParts shows parts one after the other on the line, each in its
// colour, redrawing only on a change.
func (l *tintedText) setParts(parts ...tint) {
	if slices.Equal(parts, l.parts()) {
		return
	}
	for i, p := range parts {
		if i == len(l.Segments) {
			l.Segments = append(l.Segments, &widget.TextSegment{Style: widget.RichTextStyle{Inline: true, SizeName: l.size, TextStyle: l.style}})
		}
		seg := l.Segments[i].(*widget.TextSegment)
		seg.Text, seg.Style.ColorName = p.text, p.color
	}
	l.Segments = l.Segments[:len(parts)]
	l.Refresh()
}

// parts is what the line shows, part by part.
func (l *tintedText) parts() []tint {
	out := make([]tint, len(l.Segments))
	for i, s := range l.Segments {
		seg := s.(*widget.TextSegment)
		out[i] = tint{seg.Text, seg.Style.ColorName}
	}
	return out
}

// text is what the line shows.
func (l *tintedText) text() string { return l.String() }
