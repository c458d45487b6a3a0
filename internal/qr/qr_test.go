package qr

import (
	"strings"
	"testing"
)

// The code has the size of a QR version (21 + 4v modules), its three
// finder patterns in the corners, and the drawings have the quiet zone.
func TestEncodeAndDraw(t *testing.T) {
	link := "https://192.168.1.20:7421/#token=pdt_" + strings.Repeat("x", 43)
	c, err := Encode(link)
	if err != nil {
		t.Fatal(err)
	}
	if c.Size < 21 || (c.Size-21)%4 != 0 {
		t.Fatalf("size %d is no QR version", c.Size)
	}
	// A finder pattern: a dark 7×7 ring around a light ring around a dark
	// 3×3 centre, in the top-left, top-right and bottom-left corners.
	for _, o := range [][2]int{{0, 0}, {c.Size - 7, 0}, {0, c.Size - 7}} {
		for i := range 7 {
			if !c.Dark(o[0]+i, o[1]) || !c.Dark(o[0], o[1]+i) || !c.Dark(o[0]+i, o[1]+6) || !c.Dark(o[0]+6, o[1]+i) {
				t.Fatalf("no finder ring at %v", o)
			}
		}
		if c.Dark(o[0]+1, o[1]+1) || !c.Dark(o[0]+3, o[1]+3) {
			t.Fatalf("no finder centre at %v", o)
		}
	}
	if c.Dark(-1, 0) || c.Dark(c.Size, c.Size) {
		t.Fatal("the quiet zone is dark")
	}
	img := c.Image(4)
	if got, want := img.Bounds().Dx(), (c.Size+8)*4; got != want {
		t.Fatalf("image %d px wide, want %d", got, want)
	}
	text := c.Terminal()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != (c.Size+8+1)/2 || len([]rune(lines[0])) != c.Size+8 || strings.Trim(lines[0], "█") != "" {
		t.Fatalf("terminal drawing %d lines of %d:\n%s", len(lines), len([]rune(lines[0])), text)
	}
}
