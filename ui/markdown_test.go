package ui

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/ui/uitest"
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
			for _, c := range joinSegments(t.Texts) {
				if ts, ok := c.(*widget.TextSegment); ok && ts.Style == widget.RichTextStyleParagraph {
					b.WriteString(ts.Text) // the item's line end
					continue
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
	for _, s := range joinSegments(segs) {
		line(s)
	}
	return strings.ReplaceAll(b.String(), zeroWidth, "")
}

// joinSegments reads segments as a person sees them: adjacent text of one
// style as one run (wordSegments splits a run's first word off for Fyne's
// wrapping), and a link's pieces as the one link (linkSegments).
func joinSegments(segs []widget.RichTextSegment) []widget.RichTextSegment {
	var joined []widget.RichTextSegment
	var link *widget.HyperlinkSegment // the link whose pieces are being read
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		if t, ok := s.(*widget.TextSegment); ok && t.Text == " "+zeroWidth && link != nil && i+2 < len(segs) {
			if p, ok := segs[i+2].(*linkPiece); ok && p.URL.String() == link.URL.String() {
				link.Text += " " // the space before a piece of the link
				continue
			}
		}
		if t, ok := s.(*widget.TextSegment); ok && t.Style.ColorName == theme.ColorNameHyperlink {
			// A piece of a link: its text, then the area laid over it.
			piece := segs[i+1].(*linkPiece)
			i++
			text := strings.TrimPrefix(t.Text, zeroWidth)
			if link != nil && link.URL.String() == piece.URL.String() && joined[len(joined)-1] == link {
				link.Text += text
				continue
			}
			link = &widget.HyperlinkSegment{Text: text, URL: piece.URL}
			joined = append(joined, link)
			continue
		}
		link = nil
		if t, ok := s.(*widget.TextSegment); ok && t.Style.Inline {
			if last, ok := lastText(joined); ok && last.Style == t.Style {
				joined[len(joined)-1] = &widget.TextSegment{Style: t.Style, Text: last.Text + t.Text}
				continue
			}
		}
		joined = append(joined, s)
	}
	return joined
}

func TestMarkdown(t *testing.T) {
	for _, tc := range []struct{ name, md, want string }{
		{"identifiers stay whole", "rename my_snake_case_name and foo_bar in __init__.py",
			"rename my_snake_case_name and foo_bar in *init*.py¶\n"},
		{"identifiers in a sentence", "call snake_case() then x_1", "call snake_case() then x_1¶\n"},
		{"soft breaks are spaces", "one\ntwo", "one two¶\n"},
		{"emphasis and code", "a **bold** and _it_ `x_y`", "a *bold* and _it_ `x_y`¶\n"},
		{"numbered list from its start", "3. three\n4. four", "3. three\n4. four\n"},
		{"nested list", "- a\n  1. b\n  2. c\n- d", "• a\n    1. b\n    2. c\n• d\n"},
		{"task list", "- [ ] todo\n- [x] done", "☐ todo\n☑ done\n"},
		{"quote over two lines is one block", "> first line\n> second line", "[quote]first line second line\n"},
		{"table", "| a | b |\n|---|--:|\n| 1 | 2 |", "[table]a|b\n1|2\n"},
		{"links", "see [docs](https://example.com/x) and https://go.dev", "see [docs](https://example.com/x) and [https://go.dev](https://go.dev)¶\n"},
		{"no script links", "[x](javascript:alert(1))", "x¶\n"},
		{"heading", "## Plan", "[h]Plan\n"},
		{"identifiers in bold and code", "set **COPILOT_GITHUB_TOKEN** or `GH_TOKEN`, not _GITHUB_TOKEN_",
			"set *COPILOT_GITHUB_TOKEN* or `GH_TOKEN`, not _GITHUB_TOKEN_¶\n"},
		{"a lone star in a word", "a foo*bar here", "a foo*bar here¶\n"},
		{"backslash escapes show the character", `2 \* 3 is \[not\](a link) \\ and C:\dir`, `2 * 3 is [not](a link) \ and C:\dir¶` + "\n"},
		{"a link with underscores", "see https://example.com/a_b/c_d_e.md", "see [https://example.com/a_b/c_d_e.md](https://example.com/a_b/c_d_e.md)¶\n"},
		{"a long link reads whole", "see [the notes on how a frame is drawn](https://example.com/a/b?c=d&e=f#g) and https://github.com/pilotdesk/pilotdesk/blob/main/docs/ARCHITECTURE.md now",
			"see [the notes on how a frame is drawn](https://example.com/a/b?c=d&e=f#g) and [https://github.com/pilotdesk/pilotdesk/blob/main/docs/ARCHITECTURE.md](https://github.com/pilotdesk/pilotdesk/blob/main/docs/ARCHITECTURE.md) now¶\n"},
		{"a link in a list item", "- read [the long notes on frames](https://example.com/f) first", "• read [the long notes on frames](https://example.com/f) first\n"},
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

func TestLinkPieces(t *testing.T) {
	for _, tc := range []struct {
		label string
		want  []string // a piece led by a space starts with "␣"
	}{
		{"docs", []string{"docs"}},
		{"the docs of relay", []string{"the docs of relay"}},
		{"the notes on how a frame is drawn", []string{"the", "␣notes", "␣on", "␣how", "␣a", "␣frame", "␣is", "␣drawn"}},
		{"https://github.com/pilotdesk/pilotdesk/blob/main/docs/ARCHITECTURE.md#the-fold",
			[]string{"https://github.", "com/", "pilotdesk/", "pilotdesk/", "blob/", "main/", "docs/", "ARCHITECTURE.", "md#", "the-", "fold"}},
		{"https://example.com/?q=a&b=c_d", []string{"https://example.", "com/?", "q=a&", "b=c_", "d"}},
		{"https://averyveryverylonghost.example.com/", []string{"https://averyveryver", "ylonghost.", "example.", "com/"}},
		{"see abcdefghijklmnopqrstuvwxyz0123456789", []string{"see", "␣abcdefghijklmnopqrst", "uvwxyz0123456789"}},
	} {
		var got []string
		joined := ""
		for _, p := range linkPieces(tc.label) {
			if p.space {
				got = append(got, "␣"+p.text)
				joined += " "
			} else {
				got = append(got, p.text)
			}
			joined += p.text
			if n := len([]rune(p.text)); n > linkPieceRunes && len(got) > 1 {
				t.Errorf("%q: piece %q has %d characters", tc.label, p.text, n)
			}
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("linkPieces(%q) = %q, want %q", tc.label, got, tc.want)
		}
		if joined != tc.label {
			t.Errorf("linkPieces(%q) reads %q", tc.label, joined)
		}
	}
}

// openedURLs is the test app, recording the links it was asked to open.
type openedURLs struct {
	fyne.App
	urls []string
}

func (a *openedURLs) OpenURL(u *url.URL) error {
	a.urls = append(a.urls, u.String())
	return nil
}

// placed is an object as laid out in a RichText: a piece of a link (its
// area and text) or a run of text.
type placed struct {
	area *linkArea
	url  string
	text string
	link bool // text in the hyperlink colour
	pos  fyne.Position
	size fyne.Size
}

// A long link wraps as text does: laid out in rows from narrow to wide,
// every piece of a long bare URL and of a link labelled with a sentence
// lies inside the row, over its text, the pieces read the whole label in
// order, each opens the link's one URL and hovering one underlines all,
// a short link stays one piece, and nothing overlaps on a row.
func TestMarkdownLongLinksWrap(t *testing.T) {
	app := &openedURLs{App: test.NewTempApp(t)}
	fyne.SetCurrentApp(app)
	const (
		bare    = "https://github.com/pilotdesk/pilotdesk/blob/main/docs/ARCHITECTURE.md#from-an-agents-event-to-a-pixel"
		label   = "the section of the architecture notes that says how a frame is drawn"
		labeled = "https://example.com/docs/architecture?section=frames&lang=en"
		short   = "https://example.com/x"
	)
	md := "Read " + bare + " first, then [" + label + "](" + labeled + ") and the [notes](" + short + "), then go on with the rest."
	wantLabel := map[string]string{bare: bare, labeled: label, short: "notes"}
	pad := theme.InnerPadding()
	for width := float32(200); width <= 700; width++ {
		rt := widget.NewRichText(parseMarkdown(md)...)
		rt.Wrapping = fyne.TextWrapWord
		rt.Resize(fyne.NewSize(width, rt.MinSize().Height))
		rt.Resize(fyne.NewSize(width, rt.MinSize().Height))
		r := test.TempWidgetRenderer(t, rt)
		r.Layout(rt.Size())

		var pieces, texts []placed
		for _, o := range r.Objects() {
			switch v := o.(type) {
			case *fyne.Container:
				if l, ok := v.Objects[0].(*widget.Hyperlink); ok && l.Visible() {
					// A link drawn whole, as Fyne's own link segment.
					pieces = append(pieces, placed{url: l.URL.String(), text: l.Text, pos: v.Position(), size: v.Size()})
					continue
				}
				a := v.Layout.(*pieceLayout).area
				pieces = append(pieces, placed{area: a, url: a.url.String(), text: v.Layout.(*pieceLayout).text, pos: v.Position().Add(a.Position()), size: a.Size()})
			case *canvas.Text:
				if strings.Trim(v.Text, " "+zeroWidth) != "" {
					texts = append(texts, placed{text: v.Text, pos: v.Position(), size: v.MinSize(), link: v.Color == theme.Color(theme.ColorNameHyperlink)})
				}
			}
		}
		byURL := map[string][]placed{}
		for _, p := range pieces {
			if p.pos.X < pad-0.01 || p.pos.X+p.size.Width > width-pad+0.01 {
				t.Fatalf("at width %v, the piece %q of %s lies at x %v to %v, outside the row (%v to %v)",
					width, p.text, p.url, p.pos.X, p.pos.X+p.size.Width, pad, width-pad)
			}
			// The area lies over the piece's text, which ends where it does.
			over := false
			for _, txt := range texts {
				if txt.pos.Y == p.pos.Y && abs32(txt.pos.X+txt.size.Width-(p.pos.X+p.size.Width)) < 0.01 &&
					strings.TrimLeft(txt.text, " "+zeroWidth) == p.text {
					over = true
				}
			}
			if !over {
				t.Fatalf("at width %v, the piece %q of %s at %v+%v lies over no text of its own", width, p.text, p.url, p.pos, p.size)
			}
			u := p.url
			if prev := byURL[u]; len(prev) > 0 {
				q := prev[len(prev)-1]
				if !(p.pos.Y > q.pos.Y || p.pos.Y == q.pos.Y && p.pos.X >= q.pos.X+q.size.Width-0.01) {
					t.Fatalf("at width %v, the piece %q of %s is not after %q", width, p.text, u, q.text)
				}
			}
			byURL[u] = append(byURL[u], p)
		}
		if len(byURL) != len(wantLabel) {
			t.Fatalf("at width %v, links to %d URLs, want %d", width, len(byURL), len(wantLabel))
		}
		for u, want := range wantLabel {
			var read []string
			for _, p := range byURL[u] {
				read = append(read, p.text)
			}
			if got := strings.Join(read, ""); got != strings.ReplaceAll(want, " ", "") {
				t.Fatalf("at width %v, the link to %s reads %q, want %q", width, u, read, want)
			}
		}
		if n := len(byURL[short]); n != 1 {
			t.Fatalf("at width %v, the short link is %d pieces", width, n)
		}
		// A line that starts with a piece of a link starts at the row's
		// start, not after a space.
		first := map[float32]placed{}
		for _, a := range texts {
			if f, ok := first[a.pos.Y]; !ok || a.pos.X < f.pos.X {
				first[a.pos.Y] = a
			}
		}
		for _, f := range first {
			if f.link && (f.pos.X > pad+0.01 || strings.HasPrefix(strings.TrimLeft(f.text, zeroWidth), " ")) {
				t.Fatalf("at width %v, a line starts with %q at x %v, not with its word at %v", width, f.text, f.pos.X, pad)
			}
		}
		for i, a := range texts {
			for _, b := range texts[i+1:] {
				if a.pos.Y == b.pos.Y && a.pos.X < b.pos.X+b.size.Width-0.01 && b.pos.X < a.pos.X+a.size.Width-0.01 {
					t.Fatalf("at width %v, %q and %q overlap on a row", width, a.text, b.text)
				}
			}
			if a.pos.X+a.size.Width > width-pad+0.01 && strings.TrimRight(a.text, " ") != a.text {
				continue // a space at the end of a line may pass its end
			}
			if a.pos.X+a.size.Width > width-pad+0.01 {
				t.Fatalf("at width %v, %q runs past the end of its row", width, a.text)
			}
		}
		if width == 300 {
			// On a canvas, as the pointer finds them: tapping any piece opens
			// the link's URL, and the pointer over one underlines them all.
			size := rt.Size()
			w := test.NewTempWindow(t, rt)
			w.SetPadded(false)
			w.Resize(size)
			if rt.Size() != size {
				t.Fatalf("the text is %v on the canvas, want %v", rt.Size(), size)
			}
			for u, ps := range byURL {
				for _, p := range ps {
					app.urls = nil
					test.TapCanvas(w.Canvas(), p.pos.Add(fyne.NewPos(p.size.Width/2, p.size.Height/2)))
					if len(app.urls) != 1 || app.urls[0] != u {
						t.Fatalf("tapping the piece %q opened %q, want %s", p.text, app.urls, u)
					}
				}
				last := ps[len(ps)-1]
				test.MoveMouse(w.Canvas(), last.pos.Add(fyne.NewPos(last.size.Width/2, last.size.Height/2)))
				for i, p := range ps {
					under := test.WidgetRenderer(p.area.obj).Objects()[0]
					if !p.area.hovered || !under.Visible() {
						t.Fatalf("the pointer over %q: the piece %q of %s is not underlined", last.text, p.text, u)
					}
					// One line under the pieces of a row, spaces and all.
					if i > 0 && ps[i-1].pos.Y == p.pos.Y {
						prev := ps[i-1]
						if gap := p.pos.X + under.Position().X - (prev.pos.X + prev.size.Width); gap > 0.01 {
							t.Fatalf("the underline of %s stops %v before %q", u, gap, p.text)
						}
					}
				}
				test.MoveMouse(w.Canvas(), fyne.NewPos(1, 1))
				if ps[0].area.hovered {
					t.Fatalf("the link %s stays underlined", u)
				}
			}
			if got := strings.ReplaceAll(rt.String(), zeroWidth, ""); !strings.Contains(got, "Read "+bare+" first, then "+label+" and the notes, then") {
				t.Fatalf("the text of the reply reads %q", got)
			}
		}
	}
}

func abs32(f float32) float32 {
	if f < 0 {
		return -f
	}
	return f
}

// hoverLink puts the pointer of w's canvas over the first piece of the
// link to u.
func hoverLink(t *testing.T, w fyne.Window, u string) {
	t.Helper()
	var found *linkArea
	uitest.Walk(w.Content(), func(o fyne.CanvasObject) bool {
		if found != nil || !o.Visible() {
			return false
		}
		if a, ok := linkAreaOf(o); ok && a.url.String() == u {
			found = a
		}
		return true
	})
	if found == nil {
		t.Fatalf("no link to %s on screen", u)
	}
	pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(found.obj)
	test.MoveMouse(w.Canvas(), pos.Add(fyne.NewPos(found.Size().Width/2, found.Size().Height/2)))
	if !found.hovered {
		t.Fatalf("the pointer at %v is not over the link to %s", pos, u)
	}
}

// In the window, a reply's long links lie inside its row, each piece
// opening its link, and Copy reply gives the reply's markdown, links and
// all, not the pieces drawn.
func TestLongLinksInTheWindow(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(860, 560)})
	h.send("long links")
	h.waitFor("the long links turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	h.frame()

	type found struct {
		area *linkArea
		rt   *widget.RichText
	}
	var areas []found
	var walk func(o fyne.CanvasObject, rt *widget.RichText)
	walk = func(o fyne.CanvasObject, rt *widget.RichText) {
		if o == nil || !o.Visible() {
			return
		}
		switch v := o.(type) {
		case *linkArea:
			areas = append(areas, found{v, rt})
		case *linkStop:
			areas = append(areas, found{&v.linkArea, rt})
			return
		case *fyne.Container:
			for _, c := range v.Objects {
				walk(c, rt)
			}
		case fyne.Widget:
			if r, ok := v.(*widget.RichText); ok {
				rt = r
			}
			for _, c := range test.WidgetRenderer(v).Objects() {
				walk(c, rt)
			}
		}
	}
	walk(h.w.Window().Content(), nil)
	d := fyne.CurrentApp().Driver()
	pad := theme.InnerPadding()
	urls := map[string]int{}
	for _, a := range areas {
		pos, row := d.AbsolutePositionForObject(a.area.obj), d.AbsolutePositionForObject(a.rt)
		if pos.X < row.X+pad-0.01 || pos.X+a.area.Size().Width > row.X+a.rt.Size().Width-pad+0.01 {
			t.Fatalf("a piece of %s lies at x %v to %v, outside its row (%v to %v)",
				a.area.url, pos.X, pos.X+a.area.Size().Width, row.X+pad, row.X+a.rt.Size().Width-pad)
		}
		urls[a.area.url.String()]++
	}
	for _, u := range []string{"https://github.com/fyne-io/fyne/blob/v2.7.1/widget/richtext.go#L382-L470", "https://docs.fyne.io/widget/richtext?topic=wrapping&version=2.7",
		"https://example.com/notes", "https://github.com/pilotdesk/pilotdesk/releases/tag/v0.1.0-rc.1_build-2026-11-24"} {
		if urls[u] == 0 {
			t.Fatalf("no link to %s on screen: %v", u, urls)
		}
	}
	if len(urls) != 4 || urls["https://docs.fyne.io/widget/richtext?topic=wrapping&version=2.7"] < 2 {
		t.Fatalf("links on screen: %v", urls)
	}

	rows := h.rows()
	h.w.copyReplyBefore(len(rows) - 1)
	got := h.app.Clipboard().Content()
	for _, want := range []string{
		"described at https://github.com/fyne-io/fyne/blob/v2.7.1/widget/richtext.go#L382-L470 and in [the section of the developer documentation that explains how rich text wraps its lines](https://docs.fyne.io/widget/richtext?topic=wrapping&version=2.7), which the [notes](https://example.com/notes) sum up.",
		"- the release: https://github.com/pilotdesk/pilotdesk/releases/tag/v0.1.0-rc.1_build-2026-11-24 and its checksums",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("Copy reply gave %q, want it to hold %q", got, want)
		}
	}
	if strings.Contains(got, zeroWidth) {
		t.Fatalf("Copy reply gave zero-width spaces: %q", got)
	}
}

// refreshCounter is the test app, counting the canvas refreshes that
// objects ask for (canvas.Refresh), as the real window's canvas marks
// itself dirty for each.
type refreshCounter struct {
	fyne.App
	drv *refreshDriver
}

func (a *refreshCounter) Driver() fyne.Driver { return a.drv }

type refreshDriver struct {
	fyne.Driver
	n int
}

func (d *refreshDriver) CanvasForObject(o fyne.CanvasObject) fyne.Canvas {
	return &refreshCanvas{Canvas: d.Driver.CanvasForObject(o), d: d}
}

type refreshCanvas struct {
	fyne.Canvas
	d *refreshDriver
}

func (c *refreshCanvas) Refresh(fyne.CanvasObject) { c.d.n++ }

// Laying a streaming reply's plain paragraphs and list items out again,
// as the window's paint does whenever a text in them changed, refreshes
// nothing: each of their lines is one segment. Fyne 2.7.1 lays a line of
// several segments out by resizing its last text twice, and each resize
// of a canvas.Text refreshes it, which marked the window dirty during its
// own paint and cost every streamed update a second frame.
func TestPlainLinesRelayoutWithoutRefresh(t *testing.T) {
	base := test.NewTempApp(t)
	counter := &refreshCounter{App: base, drv: &refreshDriver{Driver: base.Driver()}}
	fyne.SetCurrentApp(counter)
	reply := "I looked at how the relay stores a conversation before it fans the events out, and the order of the writes is what keeps a reconnecting window consistent."
	list := "1. The agent's process writes a JSON-RPC frame, which the reader goroutine decodes.\n2. The relay gives the event the next sequence number and encodes it once.\n   - nested, and long enough to wrap onto a second line at this width\n3. The committer"
	for _, md := range []string{reply, list, "- [x] a task done\n- [ ] and one to do, which wraps onto the line below it"} {
		rt := widget.NewRichText(parseMarkdown(md)...)
		rt.Wrapping = fyne.TextWrapWord
		w := test.NewTempWindow(t, rt)
		w.Resize(fyne.NewSize(320, 400))
		r := test.TempWidgetRenderer(t, rt)
		words := strings.SplitAfter(md, " ")
		for i := 1; i <= len(words); i++ {
			// A streamed update: the text so far, drawn again.
			rt.Segments = parseMarkdown(strings.Join(words[:i], ""))
			rt.Refresh()
			counter.drv.n = 0
			// The paint's layout pass (common.Canvas.EnsureMinSize).
			r.Layout(rt.Size())
			if counter.drv.n != 0 {
				t.Fatalf("laying out %q again refreshed %d objects", strings.Join(words[:i], ""), counter.drv.n)
			}
		}
	}
}
