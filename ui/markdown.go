package ui

import (
	"image/color"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// markdownParser parses what agents write: CommonMark with GitHub's tables,
// task lists, strikethrough and bare links. It is configured once here and
// never changed.
var markdownParser = goldmark.New(goldmark.WithExtensions(extension.Table, extension.TaskList, extension.Strikethrough, extension.Linkify)).Parser()

// parseMarkdown renders one markdown block into rich text segments.
//
// Fyne's own renderer (widget.NewRichTextFromMarkdown) puts a space after
// every inline text node, and goldmark splits text at each "_" or "*" it
// considered as emphasis: my_snake_case_name came out as "my_ snake_ case_
// name". It also numbers no nested list, indents only the first line of a
// quote and drops tables and task lists. This renderer joins adjacent text,
// keeps soft line breaks as spaces, and draws those blocks.
func parseMarkdown(md string) []widget.RichTextSegment {
	src := []byte(md)
	doc := markdownParser.Parse(text.NewReader(src))
	r := &mdRenderer{src: src}
	r.blocks(doc, 0)
	return r.out
}

// mdRenderer walks goldmark's tree and collects segments.
type mdRenderer struct {
	src []byte
	out []widget.RichTextSegment
}

// blocks renders the block children of n; depth is the list nesting.
func (r *mdRenderer) blocks(n ast.Node, depth int) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.block(c, depth)
	}
}

func (r *mdRenderer) block(n ast.Node, depth int) {
	switch b := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		r.out = append(r.out, r.inlines(n, widget.RichTextStyleInline)...)
		r.out = append(r.out, &widget.TextSegment{Style: widget.RichTextStyleParagraph})
	case *ast.Heading:
		style := widget.RichTextStyleParagraph
		switch b.Level {
		case 1:
			style = widget.RichTextStyleHeading
		case 2:
			style = widget.RichTextStyleSubHeading
		default:
			style.TextStyle.Bold = true
		}
		r.out = append(r.out, &widget.TextSegment{Style: style, Text: plainText(r.src, n)})
	case *ast.ThematicBreak:
		r.out = append(r.out, &widget.SeparatorSegment{})
	case *ast.CodeBlock, *ast.FencedCodeBlock:
		var code strings.Builder
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			code.Write(seg.Value(r.src))
		}
		r.out = append(r.out, &widget.TextSegment{Style: widget.RichTextStyleCodeBlock, Text: strings.TrimSuffix(code.String(), "\n")})
	case *ast.Blockquote:
		// One segment per paragraph of the quote, so every line of it is
		// indented, not only the first.
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			if t := strings.TrimSpace(plainText(r.src, c)); t != "" {
				r.out = append(r.out, &widget.TextSegment{Style: widget.RichTextStyleBlockquote, Text: t})
			}
		}
	case *ast.List:
		r.list(b, depth)
	case *east.Table:
		r.out = append(r.out, r.table(b))
	case *ast.HTMLBlock:
		var raw strings.Builder
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			raw.Write(seg.Value(r.src))
		}
		r.out = append(r.out, &widget.TextSegment{Style: widget.RichTextStyleParagraph, Text: strings.TrimSpace(raw.String())})
	default:
		r.blocks(n, depth)
	}
}

// list draws each item as a paragraph led by its number or bullet (or a
// task's box), indented by its depth; nested lists follow their item.
func (r *mdRenderer) list(l *ast.List, depth int) {
	indent := strings.Repeat("    ", depth)
	i := 0
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		marker := "•"
		if l.IsOrdered() {
			marker = strconv.Itoa(l.Start+i) + "."
		}
		i++
		var texts []widget.RichTextSegment
		var nested []ast.Node
		for c := item.FirstChild(); c != nil; c = c.NextSibling() {
			switch c.(type) {
			case *ast.Paragraph, *ast.TextBlock:
				if len(texts) > 0 {
					texts = append(texts, &widget.TextSegment{Style: widget.RichTextStyleInline, Text: " "})
				}
				if box, ok := c.FirstChild().(*east.TaskCheckBox); ok {
					marker = "☐"
					if box.IsChecked {
						marker = "☑"
					}
				}
				texts = append(texts, r.inlines(c, widget.RichTextStyleInline)...)
			default:
				nested = append(nested, c)
			}
		}
		lead := &widget.TextSegment{Style: widget.RichTextStyleStrong, Text: indent + marker + " "}
		// A block segment ends the item's line, as Fyne's own lists do.
		end := widget.RichTextStyleInline
		end.Inline = false
		texts = append([]widget.RichTextSegment{lead}, texts...)
		r.out = append(r.out, &widget.ParagraphSegment{Texts: append(texts, &widget.TextSegment{Style: end})})
		for _, c := range nested {
			r.block(c, depth+1)
		}
	}
}

// inlines renders the inline children of n, joining adjacent text of one
// style into one segment.
func (r *mdRenderer) inlines(n ast.Node, base widget.RichTextStyle) []widget.RichTextSegment {
	var out []widget.RichTextSegment
	add := func(style widget.RichTextStyle, s string) {
		if s == "" {
			return
		}
		if last, ok := lastText(out); ok && last.Style == style {
			last.Text += s
			return
		}
		out = append(out, &widget.TextSegment{Style: style, Text: s})
	}
	var walk func(n ast.Node, style widget.RichTextStyle)
	walk = func(n ast.Node, style widget.RichTextStyle) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch t := c.(type) {
			case *ast.Text:
				add(style, string(t.Value(r.src)))
				switch {
				case t.HardLineBreak():
					add(style, "\n")
				case t.SoftLineBreak():
					add(style, " ")
				}
			case *ast.String:
				add(style, string(t.Value))
			case *ast.CodeSpan:
				add(widget.RichTextStyleCodeInline, plainText(r.src, t))
			case *ast.Emphasis:
				s := style
				s.TextStyle = style.TextStyle
				if t.Level >= 2 {
					s.TextStyle.Bold = true
				} else {
					s.TextStyle.Italic = true
				}
				walk(t, s)
			case *ast.Link:
				out = append(out, hyperlink(plainText(r.src, t), string(t.Destination)))
			case *ast.AutoLink:
				dest := string(t.URL(r.src))
				out = append(out, hyperlink(string(t.Label(r.src)), dest))
			case *ast.Image:
				// Never loaded: an agent's image is a link to follow.
				out = append(out, hyperlink("image: "+plainText(r.src, t), string(t.Destination)))
			case *ast.RawHTML:
				segs := t.Segments
				for i := 0; i < segs.Len(); i++ {
					seg := segs.At(i)
					add(style, string(seg.Value(r.src)))
				}
			case *east.TaskCheckBox:
				// Drawn as the item's marker.
			default:
				walk(c, style)
			}
		}
	}
	walk(n, base)
	return wordSegments(out)
}

// wordSegments readies a paragraph's inline segments for Fyne's word
// wrapping, which breaks words that span a segment's start. Fyne wraps
// each text segment on its own, from where the one before it ended:
//
//   - When a segment's first word does not fit on the rest of that line,
//     Fyne moves the segment to the next line only if the whole segment
//     fits on one line; a longer one (a bold sentence, a long code span)
//     stays and its first word is cut where the line ends: "set
//     **COPILOT_GITHUB_TOKEN or GH_TOKEN in …**" showed "COPILOT_" at the
//     end of one line and "GITHUB_TOKEN" on the next. So a segment that
//     starts with a word is split after it: a one-word segment moves
//     whole, and what follows starts with the space, where Fyne breaks.
//   - When not even the first character of a segment fits on the rest of
//     the line, Fyne puts each character of the segment on a line of its
//     own. So every text segment after the first starts with a zero-width
//     space (zeroWidth), which always fits and is drawn as nothing.
//   - Fyne never wraps a link, nor moves one to the next line: a link
//     went on where the text before it ended and ran past the end of its
//     line, cut at the row's edge, and the text after it, with less than
//     no room, came one character a line. So a link is drawn as text that
//     Fyne wraps, in pieces, with hyperlinks over them (linkSegments).
//
// The first segment starts its line (or follows a list item's marker),
// where neither happens; it is left as it is.
func wordSegments(segs []widget.RichTextSegment) []widget.RichTextSegment {
	out := make([]widget.RichTextSegment, 0, len(segs))
	for i, s := range segs {
		if l, ok := s.(*widget.HyperlinkSegment); ok {
			out = append(out, linkSegments(l)...)
			continue
		}
		t, ok := s.(*widget.TextSegment)
		if !ok || !t.Style.Inline || i == 0 {
			out = append(out, s)
			continue
		}
		if w := strings.IndexFunc(t.Text, unicode.IsSpace); w > 0 {
			out = append(out, &widget.TextSegment{Style: t.Style, Text: zeroWidth + t.Text[:w]})
			out = append(out, &widget.TextSegment{Style: t.Style, Text: zeroWidth + t.Text[w:]})
			continue
		}
		out = append(out, &widget.TextSegment{Style: t.Style, Text: zeroWidth + t.Text})
	}
	return out
}

// zeroWidth is a zero-width space: no width on screen, but one character
// to Fyne's wrapping (wordSegments).
const zeroWidth = "\u200b"

func lastText(segs []widget.RichTextSegment) (*widget.TextSegment, bool) {
	if len(segs) == 0 {
		return nil, false
	}
	t, ok := segs[len(segs)-1].(*widget.TextSegment)
	return t, ok
}

// hyperlink is a link that opens in the browser, or plain text when its
// destination is no web or mail address (nothing else is opened).
func hyperlink(label, dest string) widget.RichTextSegment {
	u, err := url.Parse(dest)
	if label == "" {
		label = dest
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "mailto") {
		return &widget.TextSegment{Style: widget.RichTextStyleInline, Text: label}
	}
	return &widget.HyperlinkSegment{Alignment: fyne.TextAlignLeading, Text: label, URL: u}
}

// A link is drawn as pieces of its label, so that it wraps as text does.
// Fyne breaks lines only inside text segments, where their text does not
// fit on the rest of the line; any other segment, a link's too, goes
// wherever the segment before it ended. So each piece is two segments:
//
//   - the piece's text, as a text segment in the hyperlink colour: Fyne's
//     wrapping puts it, and counts its width, as it does other text. It
//     starts with a zero-width space (which fits on any line, see
//     wordSegments); where the label has a space before the piece, a
//     segment of that space comes first;
//   - a linkPiece, which takes no room in the row and lays a linkArea
//     over the text just before it: hovering it underlines the link's
//     pieces, clicking it opens the link's URL, as a Fyne hyperlink does.
//
// Copy takes a reply's markdown from the conversation, not from these
// segments; the text segments read the label whole to RichText.String.

// linkPieceRunes is the longest piece of a long link, in characters: a
// link at most this long is one piece, and a longer word is cut at most
// this many characters apart where no '/', '?', '&', '#', '-', '_' or '.'
// comes sooner.
const linkPieceRunes = 20

// linkSegments draws the link l as pieces that Fyne's wrapping moves to
// the next line each when it does not fit on the rest of this one.
func linkSegments(l *widget.HyperlinkSegment) []widget.RichTextSegment {
	style := widget.RichTextStyleInline
	style.ColorName = theme.ColorNameHyperlink
	group := &linkGroup{}
	var out []widget.RichTextSegment
	for _, p := range linkPieces(l.Text) {
		if p.space {
			// Its own segment, and after the space the zero-width one that
			// a new line starts with: a line never starts with the space.
			out = append(out, &widget.TextSegment{Style: widget.RichTextStyleInline, Text: " " + zeroWidth})
		}
		out = append(out,
			&widget.TextSegment{Style: style, Text: zeroWidth + p.text},
			&linkPiece{HyperlinkSegment: widget.HyperlinkSegment{Alignment: l.Alignment, Text: p.text, URL: l.URL, OnTapped: l.OnTapped}, space: p.space, group: group})
	}
	return out
}

// labelPiece is a piece of a link's label; space says a space comes
// before it.
type labelPiece struct {
	text  string
	space bool
}

// linkPieces cuts a link's label into the pieces drawn one after another:
// a short label whole, a longer one into its words, and a word longer
// than linkPieceRunes after each run of '/', '?', '&', '#', '-', '_' or
// '.' but a scheme's "://" (a URL after "https://github.", "com/", …),
// and at most linkPieceRunes characters apart.
func linkPieces(label string) []labelPiece {
	if len([]rune(label)) <= linkPieceRunes {
		return []labelPiece{{text: label}}
	}
	var out []labelPiece
	for i, word := range strings.Fields(label) {
		space := i > 0
		rs := []rune(word)
		if len(rs) <= linkPieceRunes {
			out = append(out, labelPiece{text: word, space: space})
			continue
		}
		start := 0
		for j := range rs {
			end := j + 1
			scheme := strings.HasSuffix(string(rs[start:end]), "://") // not cut from the host
			if end == len(rs) || (isLinkBreak(rs[j]) && !isLinkBreak(rs[end]) && !scheme) || end-start == linkPieceRunes {
				out = append(out, labelPiece{text: string(rs[start:end]), space: space && start == 0})
				start = end
			}
		}
	}
	return out
}

// isLinkBreak says whether a long word of a link may be cut after r.
func isLinkBreak(r rune) bool {
	return strings.ContainsRune("/?&#-_.", r)
}

// linkPiece lays a linkArea for the link's URL over the piece's text
// (Text), which the text segment before it holds and Fyne put on its line.
// The segment itself takes no room: its visual's first object is a hidden
// hyperlink holding a zero-width space, and Fyne lays a row's hyperlink
// out at the width of its text, none, on the text's baseline; its layout
// has no minimum size.
type linkPiece struct {
	widget.HyperlinkSegment
	space bool       // a space comes before the piece
	group *linkGroup // the areas of all pieces of this link
}

// Textual is nothing: the text segment before the piece holds its text.
func (p *linkPiece) Textual() string { return "" }

func (p *linkPiece) Visual() fyne.CanvasObject {
	anchor := &widget.Hyperlink{Text: zeroWidth}
	anchor.Hide()
	area := &linkArea{group: p.group}
	area.ExtendBaseWidget(area)
	p.group.areas = append(p.group.areas, area)
	c := &fyne.Container{Layout: &pieceLayout{area: area}, Objects: []fyne.CanvasObject{anchor, area}}
	area.box = c
	p.Update(c)
	return c
}

func (p *linkPiece) Update(o fyne.CanvasObject) {
	c := o.(*fyne.Container)
	l := c.Layout.(*pieceLayout)
	l.text = p.Text
	l.area.url = p.URL
	l.area.onTapped = p.OnTapped
	l.area.space = p.space
}

// pieceLayout places a piece's area over the text that ends where the
// piece's visual begins.
type pieceLayout struct {
	area *linkArea
	text string
}

func (l *pieceLayout) Layout(_ []fyne.CanvasObject, s fyne.Size) {
	w := fyne.MeasureText(l.text, theme.SizeForWidget(theme.SizeNameText, l.area), fyne.TextStyle{}).Width
	l.area.Move(fyne.NewPos(-w, 0))
	l.area.Resize(fyne.NewSize(w, s.Height))
}

func (l *pieceLayout) MinSize([]fyne.CanvasObject) fyne.Size { return fyne.Size{} }

// linkGroup is the areas of one link's pieces, underlined together.
type linkGroup struct {
	areas []*linkArea
}

func (g *linkGroup) hover(on bool) {
	for _, a := range g.areas {
		a.hovered = on
		a.Refresh()
	}
}

// linkArea is where a piece of a link is drawn: it opens the link as a
// Fyne hyperlink does (OnTapped, or the URL in the browser), shows the
// pointer and, while the pointer is over any piece of the link, underlines
// each.
type linkArea struct {
	widget.BaseWidget
	url      *url.URL
	onTapped func()
	group    *linkGroup
	hovered  bool
	space    bool            // a space comes before the piece
	box      *fyne.Container // the piece's visual, placed at the end of its text
}

// lead is how far the underline reaches back over the space before the
// piece, so that a hovered link is underlined as one: the space's width,
// unless there is none or the piece starts its line. Read once the row
// is laid out (Fyne sizes the piece's visual before it places it).
func (a *linkArea) lead() float32 {
	if !a.space || a.box == nil {
		return 0
	}
	if a.box.Position().X-a.Size().Width <= theme.SizeForWidget(theme.SizeNameInnerPadding, a)+0.5 {
		return 0
	}
	return fyne.MeasureText(" ", theme.SizeForWidget(theme.SizeNameText, a), fyne.TextStyle{}).Width
}

func (a *linkArea) Tapped(*fyne.PointEvent) {
	if a.onTapped != nil {
		a.onTapped()
		return
	}
	if err := fyne.CurrentApp().OpenURL(a.url); err != nil {
		fyne.LogError("could not open "+a.url.String(), err)
	}
}

func (a *linkArea) Cursor() desktop.Cursor         { return desktop.PointerCursor }
func (a *linkArea) MouseIn(*desktop.MouseEvent)    { a.group.hover(true) }
func (a *linkArea) MouseMoved(*desktop.MouseEvent) {}
func (a *linkArea) MouseOut()                      { a.group.hover(false) }

func (a *linkArea) CreateRenderer() fyne.WidgetRenderer {
	r := &linkAreaRenderer{a: a, under: canvas.NewRectangle(color.Transparent)}
	r.Refresh()
	return r
}

// linkAreaRenderer draws the underline of a hovered link's piece, a line
// under its text as a Fyne hyperlink's.
type linkAreaRenderer struct {
	a     *linkArea
	under *canvas.Rectangle
}

func (r *linkAreaRenderer) Layout(s fyne.Size) {
	lead := r.a.lead()
	r.under.Move(fyne.NewPos(-lead, s.Height))
	r.under.Resize(fyne.NewSize(s.Width+lead, 1))
}

func (r *linkAreaRenderer) MinSize() fyne.Size { return fyne.Size{} }

func (r *linkAreaRenderer) Refresh() {
	r.under.FillColor = theme.ColorForWidget(theme.ColorNameHyperlink, r.a)
	r.under.Hidden = !r.a.hovered
	r.Layout(r.a.Size())
	r.under.Refresh()
}

func (r *linkAreaRenderer) Objects() []fyne.CanvasObject { return []fyne.CanvasObject{r.under} }
func (r *linkAreaRenderer) Destroy()                     {}

// plainText is the text of n and its children, soft breaks as spaces.
func plainText(src []byte, n ast.Node) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Value(src))
			if t.SoftLineBreak() || t.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(t.Value)
		case *ast.CodeSpan:
			// Its text children are walked.
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// table draws a GitHub table as a grid: the header bold, cells aligned as
// the separator row says.
func (r *mdRenderer) table(t *east.Table) widget.RichTextSegment {
	seg := &tableSegment{}
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
			cells = append(cells, strings.TrimSpace(plainText(r.src, cell)))
		}
		seg.rows = append(seg.rows, cells)
	}
	for _, a := range t.Alignments {
		switch a {
		case east.AlignRight:
			seg.align = append(seg.align, fyne.TextAlignTrailing)
		case east.AlignCenter:
			seg.align = append(seg.align, fyne.TextAlignCenter)
		default:
			seg.align = append(seg.align, fyne.TextAlignLeading)
		}
	}
	return seg
}

// tableSegment is a rich text block holding a table; its first row is the
// header.
type tableSegment struct {
	rows  [][]string
	align []fyne.TextAlign
}

func (s *tableSegment) Inline() bool { return false }

// Textual is the table as tab-separated lines, for copying.
func (s *tableSegment) Textual() string {
	lines := make([]string, len(s.rows))
	for i, row := range s.rows {
		lines[i] = strings.Join(row, "\t")
	}
	return strings.Join(lines, "\n")
}

func (s *tableSegment) Visual() fyne.CanvasObject {
	cols := len(s.align)
	for _, row := range s.rows {
		cols = max(cols, len(row))
	}
	grid := container.NewGridWithColumns(max(cols, 1))
	for i, row := range s.rows {
		for c := 0; c < cols; c++ {
			cell := ""
			if c < len(row) {
				cell = row[c]
			}
			l := widget.NewLabel(cell)
			l.Wrapping = fyne.TextWrapWord
			l.TextStyle.Bold = i == 0
			if c < len(s.align) {
				l.Alignment = s.align[c]
			}
			grid.Add(l)
		}
	}
	return container.NewVBox(grid, widget.NewSeparator())
}

func (s *tableSegment) Update(fyne.CanvasObject)  {}
func (s *tableSegment) Select(_, _ fyne.Position) {}
func (s *tableSegment) SelectedText() string      { return "" }
func (s *tableSegment) Unselect()                 {}
