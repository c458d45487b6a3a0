package ui

import (
	"fmt"
	"strings"
	"testing"

	"fyne.io/fyne/v2/widget"
)

// describe prints segments as one line per block: inline text joined, a
// block's style in brackets, so a test reads what a person would see.
func describe(segs []widget.RichTextSegment) string {
	var b strings.Builder
	var line func(s widget.RichTextSegment)
	line = func(s widget.RichTextSegment) {
		switch t := s.(type) {
		case *widget.TextSegment:
			switch t.Style {
			case widget.RichTextStyleParagraph:
				b.WriteString(t.Text + "¶\n")
			case widget.RichTextStyleBlockquote:
				b.WriteString("[quote]" + t.Text + "\n")
			case widget.RichTextStyleCodeInline:
				b.WriteString("`" + t.Text + "`")
			case widget.RichTextStyleCodeBlock:
				b.WriteString("[code]" + t.Text + "\n")
			case widget.RichTextStyleHeading, widget.RichTextStyleSubHeading:
				b.WriteString("[h]" + t.Text + "\n")
			default:
				switch {
				case t.Style.TextStyle.Bold:
					b.WriteString("*" + t.Text + "*")
				case t.Style.TextStyle.Italic:
					b.WriteString("_" + t.Text + "_")
				default:
					b.WriteString(t.Text)
				}
			}
		case *widget.ParagraphSegment:
			for _, c := range t.Texts {
				if ts, ok := c.(*widget.TextSegment); ok && ts.Text == "" {
					continue // the item's line end
				}
				line(c)
			}
			b.WriteString("\n")
		case *widget.HyperlinkSegment:
			b.WriteString("[" + t.Text + "](" + t.URL.String() + ")")
		case *tableSegment:
			b.WriteString("[table]" + strings.ReplaceAll(t.Textual(), "\t", "|") + "\n")
		default:
			fmt.Fprintf(&b, "[%T]", s)
		}
	}
	for _, s := range segs {
		line(s)
	}
	return b.String()
}

func TestMarkdown(t *testing.T) {
	for _, tc := range []struct{ name, md, want string }{
		{"identifiers stay whole", "rename my_snake_case_name and foo_bar in __init__.py",
			"rename my_snake_case_name and foo_bar in *init*.py¶\n"},
		{"identifiers in a sentence", "call snake_case() then x_1", "call snake_case() then x_1¶\n"},
		{"soft breaks are spaces", "one\ntwo", "one two¶\n"},
		{"emphasis and code", "a **bold** and _it_ `x_y`", "a *bold* and _it_ `x_y`¶\n"},
		{"numbered list from its start", "3. three\n4. four", "*3. *three\n*4. *four\n"},
		{"nested list", "- a\n  1. b\n  2. c\n- d", "*• *a\n*    1. *b\n*    2. *c\n*• *d\n"},
		{"task list", "- [ ] todo\n- [x] done", "*☐ *todo\n*☑ *done\n"},
		{"quote over two lines is one block", "> first line\n> second line", "[quote]first line second line\n"},
		{"table", "| a | b |\n|---|--:|\n| 1 | 2 |", "[table]a|b\n1|2\n"},
		{"links", "see [docs](https://example.com/x) and https://go.dev", "see [docs](https://example.com/x) and [https://go.dev](https://go.dev)¶\n"},
		{"no script links", "[x](javascript:alert(1))", "x¶\n"},
		{"heading", "## Plan", "[h]Plan\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(parseMarkdown(tc.md)); got != tc.want {
				t.Errorf("parseMarkdown(%q) =\n%s\nwant\n%s", tc.md, got, tc.want)
			}
		})
	}
}
