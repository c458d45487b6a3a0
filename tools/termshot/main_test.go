package main

import (
	"strings"
	"testing"
)

// TestParse: styles apply to the cells after them, combine, carry over to
// the next line and reset; 256-colour and true-colour parameters are
// skipped whole, not read as attributes.
func TestParse(t *testing.T) {
	grid, err := parse(strings.NewReader("a\x1b[1;36mb\x1b[3mc\nd\x1b[0me\x1b[38;2;1;2;3mf\x1b[38;5;4mg\n\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(grid) != 2 {
		t.Fatalf("%d rows, want 2 (trailing empty rows dropped)", len(grid))
	}
	want := []cell{
		{'a', plain},
		{'b', style{fg: 6, bold: true}},
		{'c', style{fg: 6, bold: true, italic: true}},
		{'d', style{fg: 6, bold: true, italic: true}},
		{'e', plain},
		{'f', plain},
		{'g', style{fg: 4}},
	}
	got := append(grid[0], grid[1]...)
	if len(got) != len(want) {
		t.Fatalf("cells %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("cell %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
