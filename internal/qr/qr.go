// Package qr draws a QR code of a link, as an image for the window's Share
// dialog and as text for a terminal (`pilotdesk token create`). The code
// itself comes from github.com/yeqown/go-qrcode; this package only draws
// its modules.
package qr

import (
	"fmt"
	"image"
	"image/color"
	"strings"

	qrcode "github.com/yeqown/go-qrcode/v2"
)

// quiet is the white border around the code, in modules, that readers
// need (the standard asks for four).
const quiet = 4

// Code is an encoded QR code: Size × Size modules, true for dark.
type Code struct {
	Size    int
	modules [][]bool
}

// Encode encodes text with medium error correction (a phone reads it from
// a screen; the link is long).
func Encode(text string) (*Code, error) {
	q, err := qrcode.NewWith(text, qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionMedium))
	if err != nil {
		return nil, fmt.Errorf("qr: encode: %w", err)
	}
	var m matrix
	if err := q.Save(&m); err != nil {
		return nil, fmt.Errorf("qr: encode: %w", err)
	}
	return &Code{Size: len(m.bits), modules: m.bits}, nil
}

// matrix is a qrcode.Writer that keeps the modules.
type matrix struct{ bits [][]bool }

func (m *matrix) Write(mat qrcode.Matrix) error {
	bits := mat.Bitmap()
	// Bitmap is indexed [y][x]; the code is square.
	m.bits = bits
	return nil
}

func (m *matrix) Close() error { return nil }

// Dark reports whether the module at x, y is dark; outside the code
// (the quiet zone) it is light.
func (c *Code) Dark(x, y int) bool {
	if y < 0 || y >= len(c.modules) || x < 0 || x >= len(c.modules[y]) {
		return false
	}
	return c.modules[y][x]
}

// Image draws the code with its quiet zone, scale pixels a module, black
// on white.
func (c *Code) Image(scale int) image.Image {
	scale = max(scale, 1)
	side := (c.Size + 2*quiet) * scale
	img := image.NewGray(image.Rect(0, 0, side, side))
	for py := range side {
		for px := range side {
			v := color.Gray{Y: 0xff}
			if c.Dark(px/scale-quiet, py/scale-quiet) {
				v = color.Gray{}
			}
			img.SetGray(px, py, v)
		}
	}
	return img
}

// Terminal draws the code in text, two rows of modules a line with the
// Unicode half blocks: the light modules (and the quiet zone) are the
// blocks, drawn in the text colour, and the dark ones are spaces, the
// background. On the usual terminal, light text on a dark background, that
// is dark modules on light, as readers want (qrencode -t UTF8 draws it the
// same way; phone readers also read it inverted, on a light terminal).
func (c *Code) Terminal() string {
	var b strings.Builder
	for y := -quiet; y < c.Size+quiet; y += 2 {
		for x := -quiet; x < c.Size+quiet; x++ {
			top, bottom := !c.Dark(x, y), !c.Dark(x, y+1) // light modules are drawn
			switch {
			case top && bottom:
				b.WriteRune('█')
			case top:
				b.WriteRune('▀')
			case bottom:
				b.WriteRune('▄')
			default:
				b.WriteRune(' ')
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
