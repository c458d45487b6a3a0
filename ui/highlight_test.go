package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
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
