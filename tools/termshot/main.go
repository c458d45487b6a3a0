// Command termshot draws a terminal's screen as a PNG: it reads what
// `tmux capture-pane -p -e` prints (text with ANSI SGR styles) and paints
// it in DejaVu Sans Mono on a dark terminal's colours, bold, italic, dim,
// underlined and struck as the styles say. It makes the screenshots of
// `pilotdesk chat` (scripts/terminal-screenshot.sh), which has no window to
// photograph.
//
//	tmux capture-pane -p -e -t chat | termshot -cols 96 -o screenshots/terminal-markdown.png
package main

import (
	"bufio"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// style is a cell's SGR attributes; fg is a palette index, or -1 for the
// default foreground.
type style struct {
	fg                               int
	bold, italic, under, dim, struck bool
}

var plain = style{fg: -1}

type cell struct {
	r rune
	s style
}

// The terminal's colours: a dark theme's (VS Code's terminal), the 16 of
// the palette and the default foreground and background.
var (
	palette = [16]color.RGBA{
		{0x00, 0x00, 0x00, 255}, {0xcd, 0x31, 0x31, 255}, {0x0d, 0xbc, 0x79, 255}, {0xe5, 0xe5, 0x10, 255},
		{0x24, 0x72, 0xc8, 255}, {0xbc, 0x3f, 0xbc, 255}, {0x11, 0xa8, 0xcd, 255}, {0xe5, 0xe5, 0xe5, 255},
		{0x66, 0x66, 0x66, 255}, {0xf1, 0x4c, 0x4c, 255}, {0x23, 0xd1, 0x8b, 255}, {0xf5, 0xf5, 0x43, 255},
		{0x3b, 0x8e, 0xea, 255}, {0xd6, 0x70, 0xd6, 255}, {0x29, 0xb8, 0xdb, 255}, {0xe5, 0xe5, 0xe5, 255},
	}
	background = color.RGBA{0x1e, 0x1e, 0x1e, 255}
	foreground = color.RGBA{0xcc, 0xcc, 0xcc, 255}
)

const fontDir = "/usr/share/fonts/truetype/dejavu" // Debian's fonts-dejavu-core

func main() {
	out := flag.String("o", "", "the PNG to write")
	cols := flag.Int("cols", 80, "the terminal's width in columns")
	fonts := flag.String("fonts", fontDir, "the folder of the DejaVu fonts")
	flag.Parse()
	if *out == "" || *cols < 1 {
		fmt.Fprintln(os.Stderr, "usage: termshot -cols N -o FILE.png < capture")
		os.Exit(2)
	}
	if err := run(os.Stdin, *out, *cols, *fonts); err != nil {
		fmt.Fprintln(os.Stderr, "termshot:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out string, cols int, dir string) error {
	grid, err := parse(in)
	if err != nil {
		return fmt.Errorf("reading the capture: %w", err)
	}
	faces := map[[2]bool]font.Face{}
	for key, name := range map[[2]bool]string{
		{false, false}: "DejaVuSansMono.ttf", {true, false}: "DejaVuSansMono-Bold.ttf",
		{false, true}: "DejaVuSansMono-Oblique.ttf", {true, true}: "DejaVuSansMono-BoldOblique.ttf",
	} {
		if faces[key], err = loadFace(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	// What the monospaced font lacks (the spinner's braille) comes from
	// DejaVu Sans.
	fallback, err := loadFace(filepath.Join(dir, "DejaVuSans.ttf"))
	if err != nil {
		return err
	}
	img := paint(grid, cols, faces, fallback)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return f.Close()
}

func loadFace(path string) (font.Face, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading a font (Debian: apt-get install fonts-dejavu-core): %w", err)
	}
	f, err := opentype.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	return opentype.NewFace(f, &opentype.FaceOptions{Size: 13, DPI: 96, Hinting: font.HintingFull})
}

// parse reads the capture into rows of cells, trailing empty rows dropped.
// Styles carry over from one line to the next, as in a terminal.
func parse(in io.Reader) ([][]cell, error) {
	var grid [][]cell
	s := plain
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		var row []cell
		for i := 0; i < len(line); {
			if line[i] == 0x1b && i+1 < len(line) && line[i+1] == '[' {
				j := i + 2
				for j < len(line) && (line[j] < 0x40 || line[j] > 0x7e) {
					j++
				}
				if j < len(line) && line[j] == 'm' {
					s = sgr(s, line[i+2:j])
				}
				i = j + 1
				continue
			}
			r, n := utf8.DecodeRuneInString(line[i:])
			row = append(row, cell{r, s})
			i += n
		}
		grid = append(grid, row)
	}
	for len(grid) > 0 && len(grid[len(grid)-1]) == 0 {
		grid = grid[:len(grid)-1]
	}
	return grid, sc.Err()
}

// sgr applies one SGR sequence's parameters.
func sgr(s style, params string) style {
	ps := strings.Split(params, ";")
	for i := 0; i < len(ps); i++ {
		n, _ := strconv.Atoi(ps[i]) // "" is 0, a reset
		switch {
		case n == 0:
			s = plain
		case n == 1:
			s.bold = true
		case n == 2:
			s.dim = true
		case n == 3:
			s.italic = true
		case n == 4:
			s.under = true
		case n == 9:
			s.struck = true
		case n == 22:
			s.bold, s.dim = false, false
		case n == 23:
			s.italic = false
		case n == 24:
			s.under = false
		case n == 29:
			s.struck = false
		case n >= 30 && n <= 37:
			s.fg = n - 30
		case n == 39:
			s.fg = -1
		case n >= 90 && n <= 97:
			s.fg = n - 90 + 8
		case (n == 38 || n == 48) && i+1 < len(ps):
			// 256 colours (5;N) or true colour (2;R;G;B): the first 16
			// of 38;5 are the palette, the rest is drawn plain.
			if ps[i+1] == "5" && i+2 < len(ps) {
				if c, _ := strconv.Atoi(ps[i+2]); n == 38 && c < 16 {
					s.fg = c
				}
				i += 2
			} else if ps[i+1] == "2" {
				i += 4
			}
		}
	}
	return s
}

// paint draws the grid, cols wide, with a margin.
func paint(grid [][]cell, cols int, faces map[[2]bool]font.Face, fallback font.Face) *image.RGBA {
	regular := faces[[2]bool{false, false}]
	adv, _ := regular.GlyphAdvance('M')
	cw := adv.Ceil()
	m := regular.Metrics()
	ch := m.Height.Ceil() + 2
	const margin = 12
	img := image.NewRGBA(image.Rect(0, 0, cols*cw+2*margin, len(grid)*ch+2*margin))
	draw.Draw(img, img.Bounds(), &image.Uniform{background}, image.Point{}, draw.Src)
	for y, row := range grid {
		for x, c := range row {
			fg := foreground
			if c.s.fg >= 0 {
				fg = palette[c.s.fg]
			}
			if c.s.dim {
				fg = color.RGBA{mix(fg.R, background.R), mix(fg.G, background.G), mix(fg.B, background.B), 255}
			}
			px, py := margin+x*cw, margin+y*ch
			base := py + m.Ascent.Ceil() + 1
			face := faces[[2]bool{c.s.bold, c.s.italic}]
			if _, ok := face.GlyphAdvance(c.r); !ok && c.r != ' ' {
				face = fallback
			}
			d := font.Drawer{Dst: img, Src: &image.Uniform{fg}, Face: face, Dot: fixed.P(px, base)}
			d.DrawString(string(c.r))
			if c.s.under {
				draw.Draw(img, image.Rect(px, base+2, px+cw, base+3), &image.Uniform{fg}, image.Point{}, draw.Src)
			}
			if c.s.struck {
				mid := base - m.XHeight.Ceil()/2
				draw.Draw(img, image.Rect(px, mid, px+cw, mid+1), &image.Uniform{fg}, image.Point{}, draw.Src)
			}
		}
	}
	return img
}

// mix is halfway between a and b: a dim colour on the background.
func mix(a, b uint8) uint8 { return uint8((int(a) + int(b)) / 2) }
