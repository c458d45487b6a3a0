package ui

import (
	"image/color"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"

	"github.com/pilotdesk/pilotdesk/internal/markdown"
)

// Syntax colours are theme colour names of the window's own, so a code
// block follows the light or dark look like everything else: the app's
// theme (appTheme) resolves them from chroma's GitHub styles.
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

// syntaxColors is the colour name of each part a code token plays
// (markdown.CodeRole); plain text has none.
var syntaxColors = [...]fyne.ThemeColorName{
	markdown.RoleKeyword:  colorSyntaxKeyword,
	markdown.RoleType:     colorSyntaxType,
	markdown.RoleFunction: colorSyntaxFunction,
	markdown.RoleBuiltin:  colorSyntaxBuiltin,
	markdown.RoleString:   colorSyntaxString,
	markdown.RoleNumber:   colorSyntaxNumber,
	markdown.RoleComment:  colorSyntaxComment,
	markdown.RoleOperator: colorSyntaxOperator,
	markdown.RoleInserted: colorSyntaxInserted,
	markdown.RoleDeleted:  colorSyntaxDeleted,
}

// syntaxColor picks the colour name for a token, or "" for plain text.
func syntaxColor(t chroma.TokenType) fyne.ThemeColorName {
	return syntaxColors[markdown.CodeRole(t)]
}

// LoadLexers loads chroma's lexers, which the copy of chroma the app is
// built with (third_party/chroma) loads on first use rather than before
// main, where they cost the window's start about 10 ms. The desktop calls
// it on a goroutine of its own once the window shows, so that the first
// code block does not wait for them either. Any goroutine may call it.
func LoadLexers() { lexers.Get("go") }

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

// syntaxPalette holds each syntax colour on a light background (chroma's
// "github" style) and on a dark one ("github-dark"), copied from chroma's
// styles (TestSyntaxPaletteIsChromas compares them): importing chroma's
// styles package parses every style it has at start-up, 4 ms of the
// window's start for two of them.
var syntaxPalette = map[fyne.ThemeColorName][2]color.NRGBA{
	colorSyntaxKeyword:  {rgb(0xcf222e), rgb(0xff7b72)},
	colorSyntaxType:     {rgb(0xcf222e), rgb(0xff7b72)},
	colorSyntaxFunction: {rgb(0x6639ba), rgb(0xd2a8ff)},
	colorSyntaxString:   {rgb(0x0a3069), rgb(0xa5d6ff)},
	colorSyntaxNumber:   {rgb(0x0550ae), rgb(0xa5d6ff)},
	colorSyntaxComment:  {rgb(0x57606a), rgb(0x8b949e)},
	colorSyntaxOperator: {rgb(0x0550ae), rgb(0xff7b72)},
	colorSyntaxBuiltin:  {rgb(0x6639ba), rgb(0xe6edf3)},
	colorSyntaxInserted: {rgb(0x116329), rgb(0x56d364)},
	colorSyntaxDeleted:  {rgb(0x82071e), rgb(0xffa198)},
}

func rgb(v uint32) color.NRGBA {
	return color.NRGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// syntaxColorOf returns the colour of a syntax colour name on base (light
// or dark); false for another name.
func syntaxColorOf(base fyne.Theme, n fyne.ThemeColorName) (color.Color, bool) {
	c, ok := syntaxPalette[n]
	if !ok {
		return nil, false
	}
	if isDark(base) {
		return c[1], true
	}
	return c[0], true
}
