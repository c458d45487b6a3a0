package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// streamText draws a text row while it streams: one RichText for each of
// its blocks (a paragraph, a list item, a heading…), stacked so that they
// draw exactly what one RichText of all of them draws, and only the
// blocks whose segments changed are given them again: the finished items
// of a list keep their texts while the last one grows.
//
// Why: Fyne 2.7.1 lays a line of several segments out (a line with
// inline code, bold or a link) by resizing its last text twice, and a
// canvas.Text refreshes itself at each resize. The paint lays a RichText
// out again whenever one of its texts changed, so a reply whose block had
// such a line anywhere marked the window dirty during every paint of an
// update, which cost a second, identical frame; now only an update of the
// block holding such a line does. A row drawn once it is done is one
// RichText again (rowState.show).
type streamText struct {
	obj   *fyne.Container
	texts []*widget.RichText
	// segs are the segments each text was given last.
	segs [][]widget.RichTextSegment
}

func newStreamText() *streamText {
	v := &streamText{}
	v.obj = container.New(&blockStack{v: v})
	return v
}

// set shows segs, markdown's segments for a row (with the row's link
// copies bound).
func (v *streamText) set(segs []widget.RichTextSegment) {
	blocks := splitBlocks(segs)
	for len(v.texts) < len(blocks) {
		rt := widget.NewRichText()
		rt.Wrapping = fyne.TextWrapWord
		// Its first rows are wrapped at the row's width, not at none.
		rt.Resize(fyne.NewSize(v.obj.Size().Width, 1))
		v.texts = append(v.texts, rt)
		v.segs = append(v.segs, nil)
		v.obj.Add(rt)
	}
	for i, rt := range v.texts {
		if i >= len(blocks) {
			if rt.Visible() {
				rt.Hide()
				rt.Segments, v.segs[i] = nil, nil
			}
			continue
		}
		if !rt.Visible() {
			rt.Show()
		}
		if sameSegments(v.segs[i], blocks[i]) {
			continue
		}
		v.segs[i] = blocks[i]
		rt.Segments = blocks[i]
		rt.Refresh()
	}
}

// splitBlocks cuts a row's segments after each one that ends a line of
// its own (a paragraph's last text, a list item, a heading, a table).
func splitBlocks(segs []widget.RichTextSegment) [][]widget.RichTextSegment {
	var out [][]widget.RichTextSegment
	start := 0
	for i, s := range segs {
		if !s.Inline() {
			out = append(out, segs[start:i+1])
			start = i + 1
		}
	}
	if start < len(segs) {
		out = append(out, segs[start:])
	}
	return out
}

// sameSegments reports whether a and b draw the same. A link piece is
// never the same: each parse binds copies of its own (linkCopies), and
// the copies shown must be the bound ones.
func sameSegments(a, b []widget.RichTextSegment) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		switch x := a[i].(type) {
		case *widget.TextSegment:
			y, ok := b[i].(*widget.TextSegment)
			if !ok || x.Style != y.Style || x.Text != y.Text {
				return false
			}
		case *widget.ParagraphSegment:
			y, ok := b[i].(*widget.ParagraphSegment)
			if !ok || !sameSegments(x.Texts, y.Texts) {
				return false
			}
		case *widget.SeparatorSegment:
			if _, ok := b[i].(*widget.SeparatorSegment); !ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// blockStack lays streamText's RichTexts out one below the other, each as
// tall as it needs and the last as tall as the rest of the row, and
// overlapped so that a block's first line is where one RichText of all of
// them puts it: a RichText has its inner padding above its first line and
// below its last, where one of all of them has the line spacing between
// two blocks.
type blockStack struct{ v *streamText }

func (l *blockStack) overlap() float32 {
	if len(l.v.texts) == 0 {
		return 0
	}
	th := l.v.texts[0].Theme()
	return 2*th.Size(theme.SizeNameInnerPadding) - th.Size(theme.SizeNameLineSpacing)
}

func (l *blockStack) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	over := l.overlap()
	var shown []fyne.CanvasObject
	for _, o := range objs {
		if o.Visible() {
			shown = append(shown, o)
		}
	}
	y := float32(0)
	for i, o := range shown {
		if o.Size().Width != size.Width {
			// Wrapped at the new width first, so that its height is the
			// one it needs there.
			o.Resize(fyne.NewSize(size.Width, max(o.Size().Height, 1)))
		}
		h := o.MinSize().Height
		if i == len(shown)-1 {
			// The last block takes the rest of the row: the row has room
			// to grow (growRoom), and the block is not resized (its texts
			// not drawn again) for every line it gains.
			h = max(h, size.Height-y)
		}
		o.Move(fyne.NewPos(0, y))
		o.Resize(fyne.NewSize(size.Width, h))
		y += h - over
	}
}

func (l *blockStack) MinSize(objs []fyne.CanvasObject) fyne.Size {
	over := l.overlap()
	var w, h float32
	n := 0
	for _, o := range objs {
		if !o.Visible() {
			continue
		}
		m := o.MinSize()
		w = max(w, m.Width)
		h += m.Height
		n++
	}
	if n > 1 {
		h -= float32(n-1) * over
	}
	return fyne.NewSize(w, h)
}
