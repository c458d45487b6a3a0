package ui

import (
	"strconv"
	"strings"
	"unicode"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"

	"github.com/pilotdesk/pilotdesk/internal/markdown"
)

// parseMarkdown renders one markdown block into rich text segments.
//
// Fyne's own renderer (widget.NewRichTextFromMarkdown) puts a space after
// every inline text node, and goldmark splits text at each "_" or "*" it
// considered as emphasis: my_snake_case_name came out as "my_ snake_ case_
// name". It also numbers no nested list, indents only the first line of a
// quote and drops tables and task lists. This renderer joins adjacent text,
// keeps soft line breaks as spaces, and draws those blocks.
func parseMarkdown(md string) []widget.RichTextSegment {
	doc, src := markdown.Parse(md)
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
		r.out = append(r.out, endLine(r.inlines(n, widget.RichTextStyleInline))...)
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
		r.out = append(r.out, &widget.TextSegment{Style: widget.RichTextStyleCodeBlock, Text: strings.TrimSuffix(markdown.Lines(n, r.src), "\n")})
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
		r.out = append(r.out, &widget.TextSegment{Style: widget.RichTextStyleParagraph, Text: strings.TrimSpace(markdown.Lines(n, r.src))})
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
		// The marker is drawn in the text's weight, as browsers draw
		// list markers, and is the start of the item's first text when
		// that is plain: a line of one segment (see endLine).
		lead := indent + marker + " "
		if first, ok := firstText(texts); ok && first.Style == widget.RichTextStyleInline {
			first.Text = lead + first.Text
		} else {
			texts = append([]widget.RichTextSegment{&widget.TextSegment{Style: widget.RichTextStyleInline, Text: lead}}, texts...)
		}
		r.out = append(r.out, &widget.ParagraphSegment{Texts: endLine(texts)})
		for _, c := range nested {
			r.block(c, depth+1)
		}
	}
}

// inlines renders the inline children of n, joining adjacent text of one
// style into one segment.
func (r *mdRenderer) inlines(n ast.Node, base widget.RichTextStyle) []widget.RichTextSegment {
	var out []widget.RichTextSegment
	// Adjacent text of one style is gathered in a builder and becomes one
	// segment when the style changes or another segment comes: goldmark
	// gives a text node per "[" or "*" it looked at, and adding each to
	// the segment's string copied it every time (128 KB of "[" took
	// minutes, issue #33).
	var (
		pending      strings.Builder
		pendingStyle widget.RichTextStyle
	)
	flush := func() {
		if pending.Len() > 0 {
			out = append(out, &widget.TextSegment{Style: pendingStyle, Text: pending.String()})
			pending.Reset()
		}
	}
	add := func(style widget.RichTextStyle, s string) {
		if s == "" {
			return
		}
		if pending.Len() > 0 && pendingStyle != style {
			flush()
		}
		if pending.Len() == 0 {
			if last, ok := lastText(out); ok && last.Style == style {
				// Text of the style of the segment before, after an
				// empty run: goes on with it.
				pending.WriteString(last.Text)
				out = out[:len(out)-1]
			}
			pendingStyle = style
		}
		pending.WriteString(s)
	}
	segment := func(seg widget.RichTextSegment) {
		flush()
		out = append(out, seg)
	}
	var walk func(n ast.Node, style widget.RichTextStyle)
	walk = func(n ast.Node, style widget.RichTextStyle) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch t := c.(type) {
			case *ast.Text:
				add(style, markdown.Text(t, r.src))
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
				segment(hyperlink(plainText(r.src, t), string(t.Destination)))
			case *ast.AutoLink:
				dest := string(t.URL(r.src))
				segment(hyperlink(string(t.Label(r.src)), dest))
			case *ast.Image:
				// Never loaded: an agent's image is a link to follow.
				segment(hyperlink("image: "+plainText(r.src, t), string(t.Destination)))
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
	flush()
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

// endLine ends a paragraph's (or a list item's) inline segments with a
// block segment, which ends its line. When the last segment is plain
// text, it becomes that block segment itself rather than being followed
// by an empty one, so that a paragraph of plain text is one segment, and
// so is every line of it. This matters to the frames a streaming reply
// costs: Fyne 2.7.1's RichText lays a line of more than one segment out
// by resizing its last text to its own width and then to the width of
// the line, and a canvas.Text refreshes itself on every resize. The paint
// lays a rich text out again whenever one of its texts changed (a
// streamed word), so every such line marked the window dirty again, and
// every update of a streaming reply cost a second, identical frame.
func endLine(segs []widget.RichTextSegment) []widget.RichTextSegment {
	if last, ok := lastText(segs); ok && last.Style == widget.RichTextStyleInline {
		last.Style = widget.RichTextStyleParagraph
		return segs
	}
	return append(segs, &widget.TextSegment{Style: widget.RichTextStyleParagraph})
}

func firstText(segs []widget.RichTextSegment) (*widget.TextSegment, bool) {
	if len(segs) == 0 {
		return nil, false
	}
	t, ok := segs[0].(*widget.TextSegment)
	return t, ok
}

func lastText(segs []widget.RichTextSegment) (*widget.TextSegment, bool) {
	if len(segs) == 0 {
		return nil, false
	}
	t, ok := segs[len(segs)-1].(*widget.TextSegment)
	return t, ok
}

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
