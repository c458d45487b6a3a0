package ui

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
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
	// Adjacent text of one style reads as one run, as a person sees it
	// (wordSegments splits a run's first word off for Fyne's wrapping).
	var joined []widget.RichTextSegment
	for _, s := range segs {
		if t, ok := s.(*widget.TextSegment); ok && t.Style.Inline {
			if last, ok := lastText(joined); ok && last.Style == t.Style {
				joined[len(joined)-1] = &widget.TextSegment{Style: t.Style, Text: last.Text + t.Text}
				continue
			}
		}
		joined = append(joined, s)
	}
	for _, s := range joined {
		line(s)
	}
	return strings.ReplaceAll(b.String(), zeroWidth, "")
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
		{"identifiers in bold and code", "set **COPILOT_GITHUB_TOKEN** or `GH_TOKEN`, not _GITHUB_TOKEN_",
			"set *COPILOT_GITHUB_TOKEN* or `GH_TOKEN`, not _GITHUB_TOKEN_¶\n"},
		{"a lone star in a word", "a foo*bar here", "a foo*bar here¶\n"},
		{"a link with underscores", "see https://example.com/a_b/c_d_e.md", "see [https://example.com/a_b/c_d_e.md](https://example.com/a_b/c_d_e.md)¶\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(parseMarkdown(tc.md)); got != tc.want {
				t.Errorf("parseMarkdown(%q) =\n%s\nwant\n%s", tc.md, got, tc.want)
			}
		})
	}
}

// wrappedLines lays segs out in a RichText width wide, wrapping words as
// the transcript does, and returns the text of each line on screen.
func wrappedLines(t *testing.T, segs []widget.RichTextSegment, width float32) []string {
	t.Helper()
	rt := widget.NewRichText(segs...)
	rt.Wrapping = fyne.TextWrapWord
	rt.Resize(fyne.NewSize(width, rt.MinSize().Height))
	rt.Resize(fyne.NewSize(width, rt.MinSize().Height))
	r := test.TempWidgetRenderer(t, rt)
	r.Layout(rt.Size())
	rows := map[float32]string{}
	var ys []float32
	type placed struct {
		x    float32
		text string
	}
	byRow := map[float32][]placed{}
	for _, o := range r.Objects() {
		txt, ok := o.(*canvas.Text)
		if !ok || txt.Text == "" {
			continue
		}
		y := txt.Position().Y
		if _, seen := byRow[y]; !seen {
			ys = append(ys, y)
		}
		byRow[y] = append(byRow[y], placed{txt.Position().X, txt.Text})
	}
	sort.Slice(ys, func(i, j int) bool { return ys[i] < ys[j] })
	var lines []string
	for _, y := range ys {
		p := byRow[y]
		sort.Slice(p, func(i, j int) bool { return p[i].x < p[j].x })
		var b strings.Builder
		for _, x := range p {
			b.WriteString(x.text)
		}
		rows[y] = strings.ReplaceAll(b.String(), zeroWidth, "")
		lines = append(lines, rows[y])
	}
	return lines
}

// An identifier is one word on screen at every width: never cut at its
// underscore onto two lines, in plain text, bold or code, even where a
// bold or code run longer than a line starts with it. And no line holds a
// single character of a word that did not fit after a bold or code run.
func TestMarkdownIdentifiersWrapWhole(t *testing.T) {
	test.NewTempApp(t)
	md := "Set COPILOT_GITHUB_TOKEN first. Then set **COPILOT_GITHUB_TOKEN or GH_TOKEN in the environment of the shell that starts the relay** " +
		"and run `COPILOT_GITHUB_TOKEN=ghp_x pilotdesk relay --agent copilot --listen 127.0.0.1:8443` again: **note** that `x_y` is *it_here* so. " +
		"See https://example.com/a/long/path/to/the/docs/of/copilot_github_token.md for more, and GH_TOKEN too."
	words := []string{"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "COPILOT_GITHUB_TOKEN=ghp_x", "x_y", "it_here"}
	for width := float32(240); width <= 640; width++ {
		lines := wrappedLines(t, parseMarkdown(md), width)
		all := strings.Join(lines, "\n")
		for _, w := range words {
			if want := strings.Count(md, w); strings.Count(all, w) != want {
				t.Fatalf("at width %v, %q is cut (seen %d times whole, want %d):\n%s", width, w, strings.Count(all, w), want, all)
			}
		}
		for i := 1; i < len(lines); i++ {
			if len([]rune(strings.TrimSpace(lines[i-1]))) == 1 && len([]rune(strings.TrimSpace(lines[i]))) == 1 {
				t.Fatalf("at width %v, a character a line:\n%s", width, all)
			}
		}
	}
}

// A notice's body (a start error names the token's variable) renders
// identifiers whole, as the transcript does.
func TestNoticeIdentifiers(t *testing.T) {
	test.NewTempApp(t)
	n := newNoticeCard(startNoticeID, nil, "pilotdesk could not start", "not signed in: set a GitHub token in COPILOT_GITHUB_TOKEN, or use --provider-url")
	if got := strings.ReplaceAll(n.body.String(), zeroWidth, ""); !strings.Contains(got, "in COPILOT_GITHUB_TOKEN, or") {
		t.Fatalf("notice body %q", got)
	}
}
