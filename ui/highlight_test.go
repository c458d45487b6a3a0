package ui

import (
	"image/color"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/styles"

	"github.com/pilotdesk/pilotdesk/conversation"
)

func TestHighlight(t *testing.T) {
	code := "func main() {\n\t// hi\n\tfmt.Println(\"x\", 42)\n}"
	segs := highlight(code, "go")
	var all strings.Builder
	colors := map[string]string{}
	for _, s := range segs {
		ts := s.(*widget.TextSegment)
		if !ts.Style.TextStyle.Monospace {
			t.Fatalf("segment %q is not monospace", ts.Text)
		}
		all.WriteString(ts.Text)
		colors[strings.TrimSpace(ts.Text)] = string(ts.Style.ColorName)
	}
	if all.String() != code {
		t.Fatalf("the segments hold %q, not the code", all.String())
	}
	for text, want := range map[string]string{"func": string(colorSyntaxKeyword), "// hi": string(colorSyntaxComment), `"x"`: string(colorSyntaxString), "42": string(colorSyntaxNumber)} {
		if colors[text] != want {
			t.Errorf("%s is coloured %q, want %q (all: %v)", text, colors[text], want, colors)
		}
	}
	// An unknown language is plain text, whole.
	segs = highlight("some words", "no-such-language")
	if len(segs) != 1 || segs[0].(*widget.TextSegment).Text != "some words" || segs[0].(*widget.TextSegment).Style.ColorName != theme.ColorNameForeground {
		t.Fatalf("plain: %+v", segs)
	}
}

// TestSyntaxPaletteIsChromas: the syntax colours copied into the window are
// those of chroma's "github" and "github-dark" styles.
func TestSyntaxPaletteIsChromas(t *testing.T) {
	for n, tt := range syntaxTokens {
		for i, name := range []string{"github", "github-dark"} {
			e := styles.Get(name).Get(tt)
			if !e.Colour.IsSet() {
				t.Fatalf("%s has no colour for %v", name, tt)
			}
			want := color.NRGBA{R: e.Colour.Red(), G: e.Colour.Green(), B: e.Colour.Blue(), A: 0xff}
			if got := syntaxPalette[n][i]; got != want {
				t.Errorf("%s %v: %v, chroma says %v", name, n, got, want)
			}
		}
	}
	if len(syntaxPalette) != len(syntaxTokens) {
		t.Fatalf("%d colours for %d names", len(syntaxPalette), len(syntaxTokens))
	}
}

// TestCodeIsColouredByTheAppTheme: a code block's text takes its syntax
// colours from the app's theme, light and dark, with no theme override of
// its own (each override kept its own parsed fonts for good).
func TestCodeIsColouredByTheAppTheme(t *testing.T) {
	a := test.NewTempApp(t)
	for i, variant := range []fyne.ThemeVariant{theme.VariantLight, theme.VariantDark} {
		a.Settings().SetTheme(FixedVariant(theme.DefaultTheme(), variant))
		useAppTheme(a)
		v := newCodeView(&transcript{win: &Window{app: a}})
		v.set(conversation.Row{Kind: conversation.RowCode, Lang: "go", Text: "func main() {}", Done: true})
		w := test.NewTempWindow(t, v.obj)
		w.Resize(fyne.NewSize(400, 100))
		found := false
		var walk func(o fyne.CanvasObject)
		walk = func(o fyne.CanvasObject) {
			switch x := o.(type) {
			case *container.ThemeOverride:
				t.Fatal("the code view has a theme override")
			case *canvas.Text:
				if x.Text == "func" {
					found = true
					if x.Color != syntaxPalette[colorSyntaxKeyword][i] {
						t.Errorf("variant %d: func is %v, want %v", variant, x.Color, syntaxPalette[colorSyntaxKeyword][i])
					}
				}
			case *fyne.Container:
				for _, c := range x.Objects {
					walk(c)
				}
			}
			if wd, ok := o.(fyne.Widget); ok {
				for _, c := range test.WidgetRenderer(wd).Objects() {
					walk(c)
				}
			}
		}
		walk(v.obj)
		if !found {
			t.Fatalf("variant %d: no text \"func\" drawn", variant)
		}
	}
}

// TestEveryTokenReadable: every colour a code block paints a token in
// (each chroma token type, through syntaxColor; plain text in the theme's
// foreground) has a contrast of at least 3:1 against the code block's
// background, light and dark. Names (chroma's Name*, such as the _ of
// "for _, n := range") were painted in the keyword colour.
func TestEveryTokenReadable(t *testing.T) {
	t.Parallel()
	const minCodeContrast = 3
	for _, variant := range []fyne.ThemeVariant{theme.VariantLight, theme.VariantDark} {
		base := FixedVariant(theme.DefaultTheme(), variant)
		th := appTheme{base}
		bg := colors(base).codeBackground
		for _, tt := range chroma.TokenTypeValues() {
			n := syntaxColor(tt)
			if n == "" {
				n = theme.ColorNameForeground
			}
			c := th.Color(n, variant)
			if r := contrastRatio(c, bg); r < minCodeContrast {
				t.Errorf("variant %d: %v is painted %v (%s), %.2f:1 on the code background %v, want at least %d:1", variant, tt, c, n, r, bg, minCodeContrast)
			}
		}
	}
}

// TestNamesArePlain: an identifier is plain text, not a keyword's or a
// type's colour.
func TestNamesArePlain(t *testing.T) {
	t.Parallel()
	colors := map[string]fyne.ThemeColorName{}
	for _, s := range highlight("for _, n := range xs {\n\tx = append(x, n)\n}\ntype T struct{}\nvar e error", "go") {
		ts := s.(*widget.TextSegment)
		for _, w := range strings.FieldsFunc(ts.Text, func(r rune) bool { return strings.ContainsRune(" \t\n,(){}=:", r) }) {
			colors[w] = ts.Style.ColorName
		}
	}
	for w, want := range map[string]fyne.ThemeColorName{"_": theme.ColorNameForeground, "n": theme.ColorNameForeground, "xs": theme.ColorNameForeground, "for": colorSyntaxKeyword, "append": colorSyntaxBuiltin, "error": colorSyntaxType} {
		if colors[w] != want {
			t.Errorf("%q is painted %q, want %q", w, colors[w], want)
		}
	}
}
