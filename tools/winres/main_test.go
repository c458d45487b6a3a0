package main

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestICOHoldsEverySize decodes the .ico's directory and each image: the
// sizes asked for, in order, each a PNG of that size.
func TestICOHoldsEverySize(t *testing.T) {
	t.Parallel()
	src := image.NewNRGBA(image.Rect(0, 0, 256, 256))
	for i := range src.Pix {
		src.Pix[i] = 0xff
	}
	src.Set(10, 10, color.NRGBA{R: 1, A: 255})
	sizes := []int{16, 48, 256}
	b, err := encodeICO(src, sizes)
	if err != nil {
		t.Fatal(err)
	}
	var head [3]uint16
	if err := binary.Read(bytes.NewReader(b), binary.LittleEndian, &head); err != nil {
		t.Fatal(err)
	}
	if head != [3]uint16{0, 1, 3} {
		t.Fatalf("ICONDIR %v, want [0 1 3]", head)
	}
	for i, want := range sizes {
		e := b[6+16*i : 6+16*(i+1)]
		dim := int(e[0])
		if dim == 0 {
			dim = 256
		}
		size := binary.LittleEndian.Uint32(e[8:])
		off := binary.LittleEndian.Uint32(e[12:])
		img, err := png.Decode(bytes.NewReader(b[off : off+size]))
		if err != nil {
			t.Fatalf("image %d: %v", i, err)
		}
		if dim != want || img.Bounds().Dx() != want || img.Bounds().Dy() != want {
			t.Errorf("image %d: entry %d, PNG %v, want %d", i, dim, img.Bounds(), want)
		}
	}
}

// TestRunWritesTheResources: the three files, the version in Windows' four
// parts, and bad versions refused.
func TestRunWritesTheResources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := run("../../assets/icon.png", "1.2.3", 45, dir); err != nil {
		t.Fatal(err)
	}
	rc, err := os.ReadFile(filepath.Join(dir, "pilotdesk.rc"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FILEVERSION 1,2,3,45", `"ProductVersion", "1.2.3"`, `1 ICON "pilotdesk.ico"`, `1 24 "pilotdesk.manifest"`} {
		if !strings.Contains(string(rc), want) {
			t.Errorf("pilotdesk.rc lacks %q", want)
		}
	}
	m, err := os.ReadFile(filepath.Join(dir, "pilotdesk.manifest"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m), `version="1.2.3.45"`) || !strings.Contains(string(m), "asInvoker") {
		t.Errorf("manifest lacks the version or asInvoker:\n%s", m)
	}
	for _, bad := range []string{"1.2", "1.2.x", "1.2.70000"} {
		if err := run("../../assets/icon.png", bad, 1, t.TempDir()); err == nil {
			t.Errorf("version %q accepted", bad)
		}
	}
}
