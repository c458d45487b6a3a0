package ui

import (
	"image/color"
	"math"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// palette holds the few colours the window adds to the theme. They follow
// the theme's own light or dark look, which the system chooses.
type palette struct {
	amberBackground color.Color
	amberBorder     color.Color
	amberText       color.Color
	codeBackground  color.Color
	userBackground  color.Color
	subtle          color.Color
	live            color.Color
	reconnecting    color.Color
	offline         color.Color
	// The status colours (a finished turn, plan mode, an error) and the
	// links' colour, readable as text on the background: used where the
	// theme's own are not (readableColor).
	success, warning, danger, link color.Color
}

func currentVariant() fyne.ThemeVariant {
	if a := fyne.CurrentApp(); a != nil {
		return a.Settings().ThemeVariant()
	}
	return theme.VariantDark
}

// isDark reports whether the theme paints light text on a dark background,
// judged from the background itself so that any theme works.
func isDark(th fyne.Theme) bool {
	r, g, b, _ := th.Color(theme.ColorNameBackground, currentVariant()).RGBA()
	// Relative luminance, roughly.
	lum := (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(b)) / 0xffff
	return lum < 0.5
}

func colors(th fyne.Theme) palette {
	if isDark(th) {
		return palette{
			amberBackground: color.NRGBA{R: 0x4a, G: 0x37, B: 0x08, A: 0xff},
			amberBorder:     color.NRGBA{R: 0xf5, G: 0x9e, B: 0x0b, A: 0xff},
			amberText:       color.NRGBA{R: 0xfd, G: 0xe6, B: 0x8a, A: 0xff},
			codeBackground:  color.NRGBA{R: 0x1b, G: 0x1d, B: 0x22, A: 0xff},
			userBackground:  color.NRGBA{R: 0x2a, G: 0x33, B: 0x45, A: 0xff},
			subtle:          color.NRGBA{R: 0x9a, G: 0xa0, B: 0xa6, A: 0xff},
			live:            color.NRGBA{R: 0x15, G: 0x80, B: 0x3d, A: 0xff},
			reconnecting:    color.NRGBA{R: 0xb4, G: 0x53, B: 0x09, A: 0xff},
			offline:         color.NRGBA{R: 0xb9, G: 0x1c, B: 0x1c, A: 0xff},
			success:         color.NRGBA{R: 0x4a, G: 0xde, B: 0x80, A: 0xff},
			warning:         color.NRGBA{R: 0xfb, G: 0xbf, B: 0x24, A: 0xff},
			danger:          color.NRGBA{R: 0xf8, G: 0x71, B: 0x71, A: 0xff},
			link:            color.NRGBA{R: 0x5b, G: 0x93, B: 0xff, A: 0xff},
		}
	}
	return palette{
		amberBackground: color.NRGBA{R: 0xff, G: 0xf3, B: 0xc4, A: 0xff},
		amberBorder:     color.NRGBA{R: 0xf5, G: 0x9e, B: 0x0b, A: 0xff},
		amberText:       color.NRGBA{R: 0x78, G: 0x35, B: 0x0f, A: 0xff},
		codeBackground:  color.NRGBA{R: 0xf1, G: 0xf3, B: 0xf5, A: 0xff},
		userBackground:  color.NRGBA{R: 0xe3, G: 0xec, B: 0xfb, A: 0xff},
		subtle:          color.NRGBA{R: 0x5f, G: 0x66, B: 0x6d, A: 0xff},
		live:            color.NRGBA{R: 0x16, G: 0xa3, B: 0x4a, A: 0xff},
		reconnecting:    color.NRGBA{R: 0xd9, G: 0x77, B: 0x06, A: 0xff},
		offline:         color.NRGBA{R: 0xdc, G: 0x26, B: 0x26, A: 0xff},
		success:         color.NRGBA{R: 0x2e, G: 0x7d, B: 0x32, A: 0xff},
		warning:         color.NRGBA{R: 0xa8, G: 0x56, B: 0x00, A: 0xff},
		danger:          color.NRGBA{R: 0xc6, G: 0x28, B: 0x28, A: 0xff},
		link:            color.NRGBA{R: 0x25, G: 0x63, B: 0xeb, A: 0xff},
	}
}

// variantTheme renders a theme in one fixed variant (light or dark) whatever
// the system says. The screenshots use it to show both looks of
// theme.DefaultTheme().
type variantTheme struct {
	fyne.Theme
	variant fyne.ThemeVariant
}

func (t variantTheme) Color(n fyne.ThemeColorName, _ fyne.ThemeVariant) color.Color {
	return t.Theme.Color(n, t.variant)
}

// FixedVariant returns th drawn always in variant (theme.VariantLight or
// theme.VariantDark).
func FixedVariant(th fyne.Theme, variant fyne.ThemeVariant) fyne.Theme {
	return variantTheme{Theme: th, variant: variant}
}

// appTheme is the app's theme plus the window's own colour names (the
// syntax colours of code blocks and diffs; colorNameHint, the colour of
// hint text; colorNameBanner, the Plan mode banner's text). Code views used a container.ThemeOverride each for them,
// and Fyne 2.7.1 keeps a set of parsed fonts per override (the theme's,
// the fallback, the 4 MB emoji font and a system font, for each text
// style), never freed: every code block ever drawn added megabytes. With
// the names in the app's theme, all text shares one set per style.
type appTheme struct{ fyne.Theme }

func (t appTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	if c, ok := syntaxColorOf(t.Theme, n); ok {
		return c
	}
	if n == colorNameHint {
		return colors(t.Theme).subtle
	}
	if n == colorNameBanner {
		return colors(t.Theme).amberText
	}
	return t.readableColor(n, v)
}

// minTextContrast is WCAG's contrast for text (AA).
const minTextContrast = 4.5

// readableColor is the theme's colour n, unless n is a colour the window
// draws text in (a finished turn's "Completed", plan mode's and an
// error's words, a tool's state, a link) and the theme's is too faint to
// read on its background: Fyne's default light theme draws success in a
// green of 1.5:1, warning 2.2:1, error 3.7:1, and its dark one links in
// 4.0:1. The palette's colour is used then; a theme whose colour reads
// keeps it. A button of that importance is filled with the colour, and
// its label (the theme's foreground on it, white) reads better on the
// darker fill too.
func (t appTheme) readableColor(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	c := t.Theme.Color(n, v)
	var ours color.Color
	switch n {
	case theme.ColorNameSuccess:
		ours = colors(t.Theme).success
	case theme.ColorNameWarning:
		ours = colors(t.Theme).warning
	case theme.ColorNameError:
		ours = colors(t.Theme).danger
	case theme.ColorNameHyperlink:
		ours = colors(t.Theme).link
	default:
		return c
	}
	if contrastRatio(c, t.Theme.Color(theme.ColorNameBackground, v)) >= minTextContrast {
		return c
	}
	return ours
}

// contrastRatio is WCAG's contrast ratio of fg drawn over an opaque bg,
// from 1 (none) to 21 (black on white).
func contrastRatio(fg, bg color.Color) float64 {
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
	a, b := lum(over(fg, bg)), lum(bg)
	if a < b {
		a, b = b, a
	}
	return (a + 0.05) / (b + 0.05)
}

// useAppTheme makes a's theme an appTheme over the theme it has, now and
// whenever another theme is set (the screenshots set a light and a dark
// one).
func useAppTheme(a fyne.App) {
	wrap := func() {
		th := a.Settings().Theme()
		if th == nil {
			th = theme.DefaultTheme()
		}
		if _, ok := th.(appTheme); !ok {
			a.Settings().SetTheme(appTheme{th})
		}
	}
	wrap()
	a.Settings().AddListener(func(fyne.Settings) { wrap() })
}

// firstFrameStyles are the text styles the window's first frame draws:
// its text, and the bold of its title, toggle and status.
var firstFrameStyles = []fyne.TextStyle{{}, {Bold: true}}

// warmFaces has Fyne load the faces of styles on goroutines of their own,
// so that NewWindow overlaps them with the driver's connecting to the
// display: the first measurement of a style parses its theme font and the
// system font Fyne adds to it as a fallback, about 10 ms a style on a
// 2-core machine, and the window is mapped only once its first frame has
// been measured. Fyne keeps the faces in caches of its own that any
// goroutine may fill; the caller waits for the group before it measures
// text itself, so no face is used by two goroutines at once.
func warmFaces(styles []fyne.TextStyle) *sync.WaitGroup {
	var wg sync.WaitGroup
	size := theme.TextSize()
	for _, s := range styles {
		wg.Go(func() { fyne.MeasureText("", size, s) })
	}
	return &wg
}

// over is the opaque colour of fg laid on the opaque colour bg.
func over(fg, bg color.Color) color.Color {
	f := color.NRGBAModel.Convert(fg).(color.NRGBA)
	b := color.NRGBAModel.Convert(bg).(color.NRGBA)
	mix := func(x, y uint8) uint8 {
		return uint8((int(x)*int(f.A) + int(y)*(255-int(f.A)) + 127) / 255)
	}
	return color.NRGBA{R: mix(f.R, b.R), G: mix(f.G, b.G), B: mix(f.B, b.B), A: 0xff}
}
