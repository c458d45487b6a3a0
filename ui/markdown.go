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
//     The first piece's area is a linkStop, the link's one place in the
//     keyboard's Tab order.
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
	labels := linkPieces(l.Text)
	var out []widget.RichTextSegment
	for i, p := range labels {
		if p.space {
			// Its own segment, and after the space the zero-width one that
			// a new line starts with: a line never starts with the space.
			out = append(out, &widget.TextSegment{Style: widget.RichTextStyleInline, Text: " " + zeroWidth})
		}
		piece := &linkPiece{HyperlinkSegment: widget.HyperlinkSegment{Alignment: l.Alignment, Text: p.text, URL: l.URL, OnTapped: l.OnTapped},
			space: p.space, first: i == 0, last: i == len(labels)-1, group: group}
		group.pieces = append(group.pieces, piece)
		out = append(out, &widget.TextSegment{Style: style, Text: zeroWidth + p.text}, piece)
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
//
// A piece is drawn by one RichText: it makes its visual once and gives
// that one again (Visual). Segments that several RichTexts show get a
// copy of their pieces for each from linkCopies.
type linkPiece struct {
	widget.HyperlinkSegment
	space bool       // a space comes before the piece
	first bool       // the link's first piece: its area is the link's linkStop
	last  bool       // the link's last piece
	group *linkGroup // the pieces of this link

	box  *fyne.Container // the visual, once made
	area *linkArea       // the area in box
}

// Textual is nothing: the text segment before the piece holds its text.
func (p *linkPiece) Textual() string { return "" }

// Visual makes the piece's visual the first time and gives the same one
// after. A RichText asks again for the visual of a segment inside a
// paragraph (a list item's) at each refresh, as it keeps in its cache only
// the visuals of its top-level segments: a new area each time lost the
// focus and the hover of the one drawn, and the link kept every area made.
func (p *linkPiece) Visual() fyne.CanvasObject {
	if p.box != nil {
		return p.box
	}
	anchor := &widget.Hyperlink{Text: zeroWidth}
	anchor.Hide()
	var obj fyne.Widget
	if p.first {
		s := &linkStop{}
		s.ExtendBaseWidget(s)
		p.area, obj = &s.linkArea, s
	} else {
		p.area = &linkArea{}
		p.area.ExtendBaseWidget(p.area)
		obj = p.area
	}
	p.area.obj, p.area.group, p.area.first, p.area.last = obj, p.group, p.first, p.last
	p.box = &fyne.Container{Layout: &pieceLayout{area: p.area}, Objects: []fyne.CanvasObject{anchor, obj}}
	p.area.box = p.box
	p.Update(p.box)
	return p.box
}

func (p *linkPiece) Update(o fyne.CanvasObject) {
	c := o.(*fyne.Container)
	l := c.Layout.(*pieceLayout)
	l.text = p.Text
	l.area.url = p.URL
	l.area.onTapped = p.OnTapped
	l.area.space = p.space
	if a := l.area; a.focused || a.hovered {
		// The RichText refreshes its segments and then lays them out: the
		// underline and the outline, which reach back over the space
		// before the piece unless it now starts a line (lead), are drawn
		// again once the piece is in its place.
		fyne.Do(a.Refresh)
	}
}

// pieceLayout places a piece's area over the text that ends where the
// piece's visual begins.
type pieceLayout struct {
	area *linkArea
	text string
}

func (l *pieceLayout) Layout(_ []fyne.CanvasObject, s fyne.Size) {
	w := fyne.MeasureText(l.text, theme.SizeForWidget(theme.SizeNameText, l.area.obj), fyne.TextStyle{}).Width
	l.area.Move(fyne.NewPos(-w, 0))
	l.area.Resize(fyne.NewSize(w, s.Height))
}

func (l *pieceLayout) MinSize([]fyne.CanvasObject) fyne.Size { return fyne.Size{} }

// linkGroup is the pieces of one link in one RichText, in reading order,
// underlined together under the pointer and outlined together while the
// link has the keyboard's focus. It is fixed when the link's segments are
// made (linkSegments, or linkCopies.bind for a RichText's own copies), so
// it holds the pieces that RichText shows and no others.
type linkGroup struct {
	pieces []*linkPiece
	// reveal scrolls what shows the link so that its focused stop is in
	// view; nil where nothing scrolls it (linkCopies.reveal).
	reveal func(stop fyne.CanvasObject)
}

// each calls f with the area of each piece that has been drawn.
func (g *linkGroup) each(f func(a *linkArea)) {
	for _, p := range g.pieces {
		if p.area != nil {
			f(p.area)
		}
	}
}

func (g *linkGroup) hover(on bool) {
	g.each(func(a *linkArea) {
		a.hovered = on
		a.Refresh()
	})
}

func (g *linkGroup) focus(on bool) {
	g.each(func(a *linkArea) {
		a.focused = on
		a.Refresh()
	})
}

// linkCopies is one RichText's own copies of the link pieces of segments
// that other RichTexts show too. A piece draws itself once (Visual), so
// two texts showing one piece would share one visual. The transcript
// parses a row once and shows the parse in whichever row view the list
// gives it and in the view that measures rows; each view binds what it
// shows. bind keeps the copies of the pieces still shown and drops the
// others, with their areas: the pieces a link's group holds are those the
// view shows now, however often its rows are recycled or redrawn.
type linkCopies struct {
	of map[*linkPiece]*linkPiece // a piece shown → this text's copy
	// reveal is the copies' groups' reveal: the text's scroller brings a
	// link Tab reached, in a row it shows only in part, into view.
	reveal func(stop fyne.CanvasObject)
}

// bind returns segs with each link piece replaced by this text's copy of
// it (and each paragraph holding one by a paragraph of the copies), segs
// itself when it holds no link.
func (c *linkCopies) bind(segs []widget.RichTextSegment) []widget.RichTextSegment {
	b := linkBinding{old: c.of, reveal: c.reveal}
	out, _ := b.copy(segs)
	c.of = b.of
	b.prune()
	return out
}

// linkBinding is one linkCopies.bind under way. Its maps are made at the
// first link: most rows have none.
type linkBinding struct {
	old, of map[*linkPiece]*linkPiece // the last bind's copies; this one's
	groups  map[*linkGroup]*linkGroup // a link's group → its copies' group
	reveal  func(stop fyne.CanvasObject)
}

// copy returns segs with its pieces replaced by copies, and whether it
// replaced any.
func (b *linkBinding) copy(segs []widget.RichTextSegment) ([]widget.RichTextSegment, bool) {
	var out []widget.RichTextSegment // nil while nothing was replaced
	for i, s := range segs {
		n := s
		switch v := s.(type) {
		case *linkPiece:
			n = b.copyPiece(v)
		case *widget.ParagraphSegment:
			if texts, replaced := b.copy(v.Texts); replaced {
				n = &widget.ParagraphSegment{Texts: texts}
			}
		}
		if n != s && out == nil {
			out = append(make([]widget.RichTextSegment, 0, len(segs)), segs[:i]...)
		}
		if out != nil {
			out = append(out, n)
		}
	}
	if out == nil {
		return segs, false
	}
	return out, true
}

// copyPiece returns the last bind's copy of p, or a new one in the group
// of its link's copies.
func (b *linkBinding) copyPiece(p *linkPiece) *linkPiece {
	if b.of == nil {
		b.of = map[*linkPiece]*linkPiece{}
		b.groups = map[*linkGroup]*linkGroup{}
	}
	g, seen := b.groups[p.group]
	if cp, ok := b.old[p]; ok && (!seen || cp.group == g) {
		b.groups[p.group] = cp.group
		b.of[p] = cp
		return cp
	}
	if !seen {
		g = &linkGroup{reveal: b.reveal}
		b.groups[p.group] = g
	}
	cp := &linkPiece{HyperlinkSegment: p.HyperlinkSegment, space: p.space, first: p.first, last: p.last, group: g}
	g.pieces = append(g.pieces, cp)
	b.of[p] = cp
	return cp
}

// prune drops from the groups of this bind's copies the copies it did
// not give: one kept from the last bind whose link lost a piece (never so
// for one parse's segments, whose links come whole). A group holds what
// is shown.
func (b *linkBinding) prune() {
	if len(b.groups) == 0 {
		return
	}
	shown := make(map[*linkPiece]bool, len(b.of))
	for _, cp := range b.of {
		shown[cp] = true
	}
	for _, g := range b.groups {
		kept := g.pieces[:0]
		for _, p := range g.pieces {
			if shown[p] {
				kept = append(kept, p)
			}
		}
		clear(g.pieces[len(kept):])
		g.pieces = kept
	}
}

// linkArea is where a piece of a link is drawn: it opens the link as a
// Fyne hyperlink does (OnTapped, or the URL in the browser), shows the
// pointer and, while the pointer is over any piece of the link, underlines
// each; while the link has the keyboard's focus (linkStop) it outlines
// them.
type linkArea struct {
	widget.BaseWidget
	obj      fyne.Widget // the area in the tree: itself or the linkStop holding it
	url      *url.URL
	onTapped func()
	group    *linkGroup
	hovered  bool
	focused  bool
	space    bool            // a space comes before the piece
	first    bool            // the link's first piece: the outline's left edge is here
	last     bool            // the link's last piece: the outline's right edge is here
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
	if a.box.Position().X-a.Size().Width <= theme.SizeForWidget(theme.SizeNameInnerPadding, a.obj)+0.5 {
		return 0
	}
	return fyne.MeasureText(" ", theme.SizeForWidget(theme.SizeNameText, a.obj), fyne.TextStyle{}).Width
}

// open opens the link, for a click and for the keyboard alike.
func (a *linkArea) open() {
	if a.onTapped != nil {
		a.onTapped()
		return
	}
	if err := fyne.CurrentApp().OpenURL(a.url); err != nil {
		fyne.LogError("could not open "+a.url.String(), err)
	}
}

func (a *linkArea) Tapped(*fyne.PointEvent)        { a.open() }
func (a *linkArea) Cursor() desktop.Cursor         { return desktop.PointerCursor }
func (a *linkArea) MouseIn(*desktop.MouseEvent)    { a.group.hover(true) }
func (a *linkArea) MouseMoved(*desktop.MouseEvent) {}
func (a *linkArea) MouseOut()                      { a.group.hover(false) }

func (a *linkArea) CreateRenderer() fyne.WidgetRenderer {
	r := &linkAreaRenderer{a: a, under: canvas.NewRectangle(color.Transparent)}
	for i := range r.edges {
		r.edges[i] = canvas.NewRectangle(color.Transparent)
	}
	r.Refresh()
	return r
}

// linkStop is the area of a link's first piece, and the link's one stop
// for the keyboard, however many pieces it wraps into: Tab reaches it as
// it does a Fyne hyperlink (and goes on past it, as the stop takes no Tab
// of its own), every piece of the link is then outlined in the focus
// colour, and Space or Enter opens the link as a click does. Only this
// piece is fyne.Focusable, so the link is one stop and the stops come in
// the order the text is read.
type linkStop struct {
	linkArea
}

var _ fyne.Focusable = (*linkStop)(nil)

func (s *linkStop) FocusGained() {
	s.group.focus(true)
	if s.group.reveal != nil {
		s.group.reveal(s)
	}
}

func (s *linkStop) FocusLost()     { s.group.focus(false) }
func (s *linkStop) TypedRune(rune) {}

func (s *linkStop) TypedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeySpace, fyne.KeyReturn, fyne.KeyEnter:
		s.open()
	}
}

// linkFocusWidth is the width of the focus outline's lines, as a Fyne
// hyperlink's.
const linkFocusWidth = 2

// linkAreaRenderer draws the underline of a hovered link's piece, a line
// under its text as a Fyne hyperlink's, and its part of the outline of a
// focused link: lines above and below the piece (and the space before
// it), the left edge at the first piece and the right at the last, so
// that a link wrapped over lines is outlined as an inline box is in a
// browser, open where a line breaks it.
type linkAreaRenderer struct {
	a     *linkArea
	under *canvas.Rectangle
	edges [4]*canvas.Rectangle // top, bottom, left, right
}

func (r *linkAreaRenderer) Layout(s fyne.Size) {
	lead := r.a.lead()
	r.under.Move(fyne.NewPos(-lead, s.Height))
	r.under.Resize(fyne.NewSize(s.Width+lead, 1))

	const w = linkFocusWidth
	x0, x1 := -lead, s.Width
	if r.a.first {
		x0 = -w
	}
	if r.a.last {
		x1 = s.Width + w
	}
	top, bottom, left, right := r.edges[0], r.edges[1], r.edges[2], r.edges[3]
	top.Move(fyne.NewPos(x0, 0))
	top.Resize(fyne.NewSize(x1-x0, w))
	bottom.Move(fyne.NewPos(x0, s.Height-w))
	bottom.Resize(fyne.NewSize(x1-x0, w))
	left.Move(fyne.NewPos(-w, 0))
	left.Resize(fyne.NewSize(w, s.Height))
	right.Move(fyne.NewPos(s.Width, 0))
	right.Resize(fyne.NewSize(w, s.Height))
}

func (r *linkAreaRenderer) MinSize() fyne.Size { return fyne.Size{} }

func (r *linkAreaRenderer) Refresh() {
	r.under.FillColor = theme.ColorForWidget(theme.ColorNameHyperlink, r.a.obj)
	r.under.Hidden = !r.a.hovered
	// The focus colour is translucent: laid on the background it is the
	// same colour, but where the lines of two pieces meet, at fractions
	// of a pixel, it does not darken twice.
	focus := over(theme.ColorForWidget(theme.ColorNameFocus, r.a.obj), theme.ColorForWidget(theme.ColorNameBackground, r.a.obj))
	for i, e := range r.edges {
		e.FillColor = focus
		e.Hidden = !r.a.focused || i == 2 && !r.a.first || i == 3 && !r.a.last
	}
	r.Layout(r.a.Size())
	r.under.Refresh()
	for _, e := range r.edges {
		e.Refresh()
	}
}

// over is the opaque colour of fg laid on the opaque colour bg.
func over(fg, bg color.Color) color.Color {
	f := color.NRGBAModel.Convert(fg).(color.NRGBA)
	b := color.NRGBAModel.Convert(bg).(color.NRGBA)
	mix := func(x, y uint8) uint8 {
		return uint8((int(x)*int(f.A) + int(y)*(255-int(f.A)) + 127) / 255)
	}
	return color.NRGBA{R: mix(f.R, b.R), G: mix(f.G, b.G), B: mix(f.B, b.B), A: 0xff}
}

func (r *linkAreaRenderer) Objects() []fyne.CanvasObject {
	return []fyne.CanvasObject{r.under, r.edges[0], r.edges[1], r.edges[2], r.edges[3]}
}

func (r *linkAreaRenderer) Destroy() {}

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
