package ui

import (
	"image/color"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
)

// Syntax colours are theme colour names of the window's own, so a code
// block follows the light or dark look like everything else: syntaxTheme
// resolves them from chroma's GitHub styles.
const (
	colorSyntaxKeyword  fyne.ThemeColorName = "pilotdesk.syntax.keyword"
	colorSyntaxType     fyne.ThemeColorName = "pilotdesk.syntax.type"
	colorSyntaxFunction fyne.ThemeColorName = "pilotdesk.syntax.function"
	colorSyntaxString   fyne.ThemeColorName = "pilotdesk.syntax.string"
	colorSyntaxNumber   fyne.ThemeColorName = "pilotdesk.syntax.number"
	colorSyntaxComment  fyne.ThemeColorName = "pilotdesk.syntax.comment"
	colorSyntaxOperator fyne.ThemeColorName = "pilotdesk.syntax.operator"
	colorSyntaxBuiltin  fyne.ThemeColorName = "pilotdesk.syntax.builtin"
	colorSyntaxInserted fyne.ThemeColorName = "pilotdesk.syntax.inserted"
	colorSyntaxDeleted  fyne.ThemeColorName = "pilotdesk.syntax.deleted"
)

// syntaxTokens says which chroma token each colour name is painted like.
var syntaxTokens = map[fyne.ThemeColorName]chroma.TokenType{
	colorSyntaxKeyword:  chroma.Keyword,
	colorSyntaxType:     chroma.KeywordType,
	colorSyntaxFunction: chroma.NameFunction,
	colorSyntaxString:   chroma.LiteralString,
	colorSyntaxNumber:   chroma.LiteralNumber,
	colorSyntaxComment:  chroma.Comment,
	colorSyntaxOperator: chroma.Operator,
	colorSyntaxBuiltin:  chroma.NameBuiltin,
	colorSyntaxInserted: chroma.GenericInserted,
	colorSyntaxDeleted:  chroma.GenericDeleted,
}

// syntaxColor picks the colour name for a token, or "" for plain text.
func syntaxColor(t chroma.TokenType) fyne.ThemeColorName {
	switch {
	case t == chroma.KeywordType || t.InSubCategory(chroma.NameClass) || t == chroma.NameClass:
		return colorSyntaxType
	case t.InCategory(chroma.Keyword):
		return colorSyntaxKeyword
	case t == chroma.NameFunction || t == chroma.NameFunctionMagic:
		return colorSyntaxFunction
	case t.InSubCategory(chroma.NameBuiltin) || t == chroma.NameBuiltin:
		return colorSyntaxBuiltin
	case t.InSubCategory(chroma.LiteralString) || t == chroma.LiteralString:
		return colorSyntaxString
	case t.InSubCategory(chroma.LiteralNumber) || t == chroma.LiteralNumber:
		return colorSyntaxNumber
	case t.InCategory(chroma.Comment):
		return colorSyntaxComment
	case t.InCategory(chroma.Operator):
		return colorSyntaxOperator
	case t == chroma.GenericInserted:
		return colorSyntaxInserted
	case t == chroma.GenericDeleted:
		return colorSyntaxDeleted
	}
	return ""
}

// highlight cuts code into monospace segments coloured by chroma's lexer
// for lang (guessed from the code when lang is unknown; plain when no lexer
// fits). The segments together hold exactly code.
func highlight(code, lang string) []widget.RichTextSegment {
	lexer := lexers.Get(lang)
	if lexer == nil && lang == "" {
		lexer = lexers.Analyse(code)
	}
	plain := func() []widget.RichTextSegment {
		return []widget.RichTextSegment{codeSegment(code, "")}
	}
	if lexer == nil {
		return plain()
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, code)
	if err != nil {
		return plain()
	}
	var segs []widget.RichTextSegment
	var cur strings.Builder
	var curColor fyne.ThemeColorName
	flush := func() {
		if cur.Len() > 0 {
			segs = append(segs, codeSegment(cur.String(), curColor))
			cur.Reset()
		}
	}
	for tok := it(); tok != chroma.EOF; tok = it() {
		c := syntaxColor(tok.Type)
		if c != curColor {
			flush()
			curColor = c
		}
		cur.WriteString(tok.Value)
	}
	flush()
	// Lexers add a final newline that the block does not have.
	if n := len(segs); n > 0 && !strings.HasSuffix(code, "\n") {
		if last := segs[n-1].(*widget.TextSegment); strings.HasSuffix(last.Text, "\n") {
			last.Text = strings.TrimSuffix(last.Text, "\n")
			if last.Text == "" {
				segs = segs[:n-1]
			}
		}
	}
	if len(segs) == 0 {
		return plain()
	}
	return segs
}

// codeSegment is inline monospace text in a colour name ("" for the
// theme's foreground), so that a block of them wraps as one text.
func codeSegment(text string, c fyne.ThemeColorName) *widget.TextSegment {
	style := widget.RichTextStyleCodeInline
	style.ColorName = theme.ColorNameForeground
	if c != "" {
		style.ColorName = c
	}
	return &widget.TextSegment{Style: style, Text: text}
}

// syntaxTheme is the app's theme plus the syntax colours, from chroma's
// "github" style on a light background and "github-dark" on a dark one.
type syntaxTheme struct{ bannerTheme }

func (t syntaxTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	tt, ok := syntaxTokens[n]
	if !ok {
		return t.base().Color(n, v)
	}
	name := "github"
	if isDark(t.base()) {
		name = "github-dark"
	}
	entry := styles.Get(name).Get(tt)
	if !entry.Colour.IsSet() {
		return t.base().Color(theme.ColorNameForeground, v)
	}
	c := entry.Colour
	return color.NRGBA{R: c.Red(), G: c.Green(), B: c.Blue(), A: 0xff}
}
