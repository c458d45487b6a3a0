package ui

import (
	"image/color"
	"net/url"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// The links of rendered markdown (markdown.go makes them with hyperlink):
// a long link wraps, cut into pieces each its own segment, and every
// piece of one link hovers, focuses and opens as one (linkGroup); the
// Tab key reaches each link once (linkStop). A piece draws itself once,
// so each RichText that shows a parse binds copies of its own
// (linkCopies).

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

func (r *linkAreaRenderer) Objects() []fyne.CanvasObject {
	return []fyne.CanvasObject{r.under, r.edges[0], r.edges[1], r.edges[2], r.edges[3]}
}

func (r *linkAreaRenderer) Destroy() {}
