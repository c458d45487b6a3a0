package ui

import (
	"fmt"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/ui/uitest"
)

// linkAreaOf is the area of a piece of a link that o is, if it is one.
func linkAreaOf(o fyne.CanvasObject) (*linkArea, bool) {
	switch v := o.(type) {
	case *linkArea:
		return v, true
	case *linkStop:
		return &v.linkArea, true
	}
	return nil, false
}

// linkAreasIn returns the areas of the link pieces drawn in o, in the
// order they are drawn (hidden objects skipped).
func linkAreasIn(o fyne.CanvasObject) []*linkArea {
	var areas []*linkArea
	uitest.Walk(o, func(c fyne.CanvasObject) bool {
		if !c.Visible() {
			return false
		}
		if a, ok := linkAreaOf(c); ok {
			areas = append(areas, a)
			return false
		}
		return true
	})
	return areas
}

// focusedLink is the URL of the link whose stop has the focus on c, or
// what has the focus instead.
func focusedLink(c fyne.Canvas) string {
	switch f := c.Focused().(type) {
	case *linkStop:
		return f.url.String()
	case nil:
		return "nothing"
	default:
		return fmt.Sprintf("a %T", f)
	}
}

// checkOutlined fails unless exactly the pieces of the link to u among
// areas are outlined: every piece its lines above and below, the first
// its left edge, the last its right one.
func checkOutlined(t *testing.T, areas []*linkArea, u string) {
	t.Helper()
	n := 0
	for _, a := range areas {
		objs := test.WidgetRenderer(a.obj).Objects()
		top, bottom, left, right := objs[1], objs[2], objs[3], objs[4]
		want := a.url.String() == u
		if a.focused != want || top.Visible() != want || bottom.Visible() != want {
			t.Fatalf("with the link %q focused, a piece of %s: focused %v, lines above and below shown %v %v",
				u, a.url, a.focused, top.Visible(), bottom.Visible())
		}
		if left.Visible() != (want && a.first) || right.Visible() != (want && a.last) {
			t.Fatalf("with the link %q focused, a piece of %s (first %v, last %v) shows its left edge %v, its right %v",
				u, a.url, a.first, a.last, left.Visible(), right.Visible())
		}
		if want {
			n++
			if top.Size().Width < a.Size().Width || top.Size().Height <= 0 {
				t.Fatalf("the outline's line above a piece of %s is %v for a piece %v wide", u, top.Size(), a.Size().Width)
			}
		}
	}
	if u != "" && n == 0 {
		t.Fatalf("no piece of the link %s drawn", u)
	}
}

// A link is one stop of the keyboard, however many lines it wraps over:
// Tab reaches the links of a reply one after another in the order they
// are read, between what comes before and after the text, and goes on
// past the last; the focused link is outlined, all its pieces; Space,
// Return and Enter open it as a click does, other keys nothing.
func TestLinkKeyboard(t *testing.T) {
	app := &openedURLs{App: test.NewTempApp(t)}
	fyne.SetCurrentApp(app)
	const (
		first  = "https://example.com/notes/on/how/a/frame/is/drawn/in/detail"
		second = "https://go.dev/x"
		third  = "https://example.com/list-item"
	)
	md := "Read [the notes on how a frame is drawn, in all its detail](" + first + ") or " + second + " then\n\n" +
		"- in a list: [the release notes of the first candidate](" + third + ") too"
	rt := widget.NewRichText(parseMarkdown(md)...)
	rt.Wrapping = fyne.TextWrapWord
	before, after := widget.NewEntry(), widget.NewButton("after", func() {})
	w := test.NewTempWindow(t, container.NewVBox(before, rt, after))
	w.Resize(fyne.NewSize(220, 400))
	c := w.Canvas()

	areas := linkAreasIn(w.Content())
	pieces := map[string]int{}
	for _, a := range areas {
		pieces[a.url.String()]++
	}
	if pieces[first] < 3 || pieces[third] < 2 || pieces[second] != 1 {
		t.Fatalf("pieces drawn per link %v: want the first and third links wrapped", pieces)
	}
	checkOutlined(t, areas, "")

	test.FocusNext(c)
	if c.Focused() != before {
		t.Fatalf("the first Tab focused %s, want the entry before the text", focusedLink(c))
	}
	for _, u := range []string{first, second, third} {
		test.FocusNext(c)
		if got := focusedLink(c); got != u {
			t.Fatalf("Tab focused %s, want the link %s", got, u)
		}
		checkOutlined(t, areas, u)
		for _, key := range []fyne.KeyName{fyne.KeySpace, fyne.KeyReturn, fyne.KeyEnter, fyne.KeyA, fyne.KeyTab} {
			app.urls = nil
			c.Focused().TypedKey(&fyne.KeyEvent{Name: key})
			c.Focused().TypedRune('x')
			opens := key == fyne.KeySpace || key == fyne.KeyReturn || key == fyne.KeyEnter
			if opens && (len(app.urls) != 1 || app.urls[0] != u) || !opens && len(app.urls) != 0 {
				t.Fatalf("%s on the link %s opened %q", key, u, app.urls)
			}
		}
	}
	test.FocusNext(c)
	if c.Focused() != after {
		t.Fatalf("Tab after the last link focused %s, want the button after the text", focusedLink(c))
	}
	checkOutlined(t, areas, "")
	test.FocusNext(c)
	if c.Focused() != before {
		t.Fatalf("Tab after the button focused %s, want the entry again", focusedLink(c))
	}
	// And back: Shift+Tab from the entry comes to the last link.
	test.FocusPrevious(c)
	test.FocusPrevious(c)
	if got := focusedLink(c); got != third {
		t.Fatalf("Shift+Tab twice from the entry focused %s, want the link %s", got, third)
	}

	// A redraw keeps what is drawn: the focused link, a list item's too
	// (Fyne asks again for the visuals inside a paragraph at each
	// refresh), keeps its focus, outline and stop, and the pointer over a
	// piece still underlines every piece of its link.
	for width := float32(220); width < 300; width += 7 {
		w.Resize(fyne.NewSize(width, 400))
		rt.Refresh()
	}
	if now := linkAreasIn(w.Content()); len(now) != len(areas) {
		t.Fatalf("after redraws %d pieces are drawn, %d before", len(now), len(areas))
	} else {
		for i := range now {
			if now[i] != areas[i] {
				t.Fatalf("after redraws the piece %d of %s is a new area", i, now[i].url)
			}
		}
	}
	if got := focusedLink(c); got != third {
		t.Fatalf("after redraws %s has the focus, want the link %s", got, third)
	}
	checkOutlined(t, areas, third)
	var last *linkArea
	for _, a := range areas {
		if a.url.String() == first {
			last = a
		}
	}
	pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(last.obj)
	test.MoveMouse(c, pos.Add(fyne.NewPos(last.Size().Width/2, last.Size().Height/2)))
	for _, a := range areas {
		if a.hovered != (a.url.String() == first) {
			t.Fatalf("the pointer over the last piece of %s: a piece of %s hovered %v", first, a.url, a.hovered)
		}
	}
	app.urls = nil
	test.TapCanvas(c, pos.Add(fyne.NewPos(last.Size().Width/2, last.Size().Height/2)))
	if len(app.urls) != 1 || app.urls[0] != first {
		t.Fatalf("a click on the last piece of %s opened %q", first, app.urls)
	}
}

// checkGroups fails unless each link drawn in o holds, in its group, the
// pieces drawn and no others: as many as are drawn, each drawn.
func checkGroups(t *testing.T, o fyne.CanvasObject, when string) int {
	t.Helper()
	drawn := map[*linkGroup]map[*linkArea]bool{}
	for _, a := range linkAreasIn(o) {
		if drawn[a.group] == nil {
			drawn[a.group] = map[*linkArea]bool{}
		}
		drawn[a.group][a] = true
	}
	for g, areas := range drawn {
		if len(g.pieces) != len(areas) {
			t.Fatalf("%s, a link to %s holds %d pieces, %d are drawn", when, g.pieces[0].URL, len(g.pieces), len(areas))
		}
		for _, p := range g.pieces {
			if !areas[p.area] {
				t.Fatalf("%s, a link to %s holds a piece %q that is not drawn", when, p.URL, p.Text)
			}
		}
	}
	return len(drawn)
}

// Views that show one parse in turn, as the transcript's row views and
// its measuring view do while rows are recycled and redrawn, each draw
// their own pieces, and a link holds only those its view draws.
func TestLinkCopiesBounded(t *testing.T) {
	test.NewTempApp(t)
	parses := [][]widget.RichTextSegment{
		parseMarkdown("see [the notes on how a frame is drawn](https://example.com/a) and https://example.com/b/c/d/e/f/g/h/i/j/k"),
		parseMarkdown("- a list item with [a link that wraps over lines](https://example.com/c)\n- and https://example.com/d"),
		parseMarkdown("no link here"),
	}
	type view struct {
		rt    *widget.RichText
		links linkCopies
		w     fyne.Window
	}
	views := make([]*view, 3)
	for i := range views {
		v := &view{rt: widget.NewRichText()}
		v.rt.Wrapping = fyne.TextWrapWord
		v.w = test.NewTempWindow(t, v.rt)
		views[i] = v
	}
	for round := 0; round < 60; round++ {
		v := views[round%len(views)]
		v.rt.Segments = v.links.bind(parses[(round*7/3)%len(parses)])
		v.rt.Refresh()
		v.w.Resize(fyne.NewSize(float32(160+round%5*40), 300))
		for i, v := range views {
			checkGroups(t, v.w.Content(), fmt.Sprintf("round %d, view %d", round, i))
		}
	}
	// One parse in two views at once: each draws its own pieces.
	views[0].rt.Segments = views[0].links.bind(parses[0])
	views[1].rt.Segments = views[1].links.bind(parses[0])
	views[0].rt.Refresh()
	views[1].rt.Refresh()
	a, b := linkAreasIn(views[0].w.Content()), linkAreasIn(views[1].w.Content())
	if len(a) == 0 || len(a) != len(b) || a[0] == b[0] || a[0].group == b[0].group {
		t.Fatalf("two views of one parse draw %d and %d pieces, sharing them", len(a), len(b))
	}
	checkGroups(t, views[0].w.Content(), "two views of one parse")
	checkGroups(t, views[1].w.Content(), "two views of one parse")

	// Segments that hold part of a link shown before: its group keeps
	// the copies shown, not the ones dropped.
	v := views[2]
	v.rt.Segments = v.links.bind(parses[0])
	v.rt.Refresh()
	part := parses[0][:len(parses[0])-2] // the bare URL's last piece and the paragraph's end dropped
	v.rt.Segments = v.links.bind(part)
	v.rt.Refresh()
	if n := checkGroups(t, v.w.Content(), "part of a link shown"); n != 2 {
		t.Fatalf("%d links drawn from part of the parse, want 2", n)
	}
}

// In the window, Tab reaches a reply's links in the order they are read,
// each once, and Enter opens the focused one; the links' pieces stay the
// drawn ones while the rows are redrawn at many widths (the transcript
// redraws and remeasures every row) and the view scrolls.
func TestLinksInTheWindowKeyboardAndBounded(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(860, 560)})
	prev := fyne.CurrentApp()
	app := &openedURLs{App: prev}
	fyne.SetCurrentApp(app)
	t.Cleanup(func() { fyne.SetCurrentApp(prev) })
	h.send("long links")
	h.waitFor("the long links turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	h.frame()

	want := []string{
		"https://github.com/fyne-io/fyne/blob/v2.7.1/widget/richtext.go#L382-L470",
		"https://docs.fyne.io/widget/richtext?topic=wrapping&version=2.7",
		"https://example.com/notes",
		"https://github.com/pilotdesk/pilotdesk/releases/tag/v0.1.0-rc.1_build-2026-11-24",
	}
	c := h.w.Window().Canvas()
	var got []string
	for i := 0; i < 200 && len(got) < len(want)+1; i++ {
		test.FocusNext(c)
		if s, ok := c.Focused().(*linkStop); ok {
			got = append(got, s.url.String())
		} else if len(got) > 0 {
			break // past the reply's links
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Tab reached the links\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	focusLink(t, h.w.Window(), want[1])
	app.urls = nil
	h.key(fyne.KeyReturn)
	if len(app.urls) != 1 || app.urls[0] != want[1] {
		t.Fatalf("Enter on the link %s opened %q", want[1], app.urls)
	}

	links := checkGroups(t, h.w.Window().Content(), "at first")
	if links != len(want) {
		t.Fatalf("%d links drawn, want %d", links, len(want))
	}
	for i := 0; i < 40; i++ {
		width := float32(620 + (i*53)%400)
		h.w.Window().Resize(fyne.NewSize(width, 560))
		h.loop.Drain()
		h.w.transcript.remeasure()
		h.frame()
		h.loop.Drain()
		checkGroups(t, h.w.Window().Content(), fmt.Sprintf("at width %v", width))
		if got := focusedLink(c); got != want[1] {
			t.Fatalf("at width %v, %s has the focus, want the link %s", width, got, want[1])
		}
		checkOutlineJoined(t, h.w.Window().Content(), want[1], fmt.Sprintf("at width %v", width))
	}
	// The view that measures rows draws the parse the window shows: its
	// own pieces, not the window's.
	reply := -1
	for i, r := range h.rows() {
		if r.Kind == conversation.RowText && strings.Contains(r.Text, want[0]) {
			reply = i
		}
	}
	h.w.transcript.measureRow(reply)
	measured := linkAreasIn(h.w.transcript.measure.text)
	if len(measured) == 0 {
		t.Fatalf("the measuring view drew no link of the reply")
	}
	drawn := map[*linkArea]bool{}
	for _, a := range linkAreasIn(h.w.Window().Content()) {
		drawn[a] = true
	}
	for _, a := range measured {
		if drawn[a] {
			t.Fatalf("a piece of %s is drawn in the window and by the measuring view", a.url)
		}
	}
	checkGroups(t, h.w.Window().Content(), "after a measure")
	checkGroups(t, h.w.transcript.measure.text, "in the measuring view")
	if n := checkGroups(t, h.w.Window().Content(), "at last"); n != len(want) {
		t.Fatalf("%d links drawn after the redraws, want %d", n, len(want))
	}
}

// focusLink presses Tab on w's canvas until the link to u has the focus.
func focusLink(t *testing.T, w fyne.Window, u string) {
	t.Helper()
	c := w.Canvas()
	for i := 0; i < 200; i++ {
		test.FocusNext(c)
		if focusedLink(c) == u {
			return
		}
	}
	t.Fatalf("Tab never reached the link to %s", u)
}

// checkOutlineJoined fails unless the outline of the focused link to u,
// drawn in o, is one line above and below the link's pieces on each
// line: from the first piece's left edge, or the line's first piece, to
// the last piece's right edge, or the line's last piece, with no gap
// between two pieces of a line (the space between two words of the link
// is outlined) and nothing reaching before the line's first piece.
func checkOutlineJoined(t *testing.T, o fyne.CanvasObject, u, when string) {
	t.Helper()
	d := fyne.CurrentApp().Driver()
	type span struct{ x0, x1, y float32 }
	var text, top []span
	for _, a := range linkAreasIn(o) {
		if a.url.String() != u {
			continue
		}
		pos := d.AbsolutePositionForObject(a.obj)
		line := test.WidgetRenderer(a.obj).Objects()[1]
		if !line.Visible() {
			t.Fatalf("%s, a piece of the focused link %s is not outlined", when, u)
		}
		text = append(text, span{pos.X, pos.X + a.Size().Width, pos.Y})
		top = append(top, span{pos.X + line.Position().X, pos.X + line.Position().X + line.Size().Width, pos.Y})
	}
	for i := range text {
		startsLine := i == 0 || text[i-1].y != text[i].y
		switch {
		case i > 0 && !startsLine && top[i].x0 > text[i-1].x1+0.01:
			t.Fatalf("%s, the outline of %s stops %v before a piece", when, u, top[i].x0-text[i-1].x1)
		case i > 0 && startsLine && top[i].x0 < text[i].x0-0.01:
			t.Fatalf("%s, the outline of %s reaches %v before the piece that starts a line", when, u, text[i].x0-top[i].x0)
		}
	}
}

// A link Tab reaches in a row the view cuts is scrolled into view, by the
// least that shows it whole; a link already in view moves nothing.
func TestFocusedLinkScrolledIntoView(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(860, 560)})
	// A long turn first, so that the list can scroll the reply to the
	// view's bottom edge.
	h.send("formatting")
	h.waitFor("the formatting turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	h.send("long links")
	h.waitFor("the long links turn", func() bool { return completedTurns(h) == 2 })
	h.frame()
	tr := h.w.transcript
	reply := -1
	for i, r := range h.rows() {
		if r.Kind == conversation.RowText && strings.Contains(r.Text, "releases/tag") {
			reply = i
		}
	}
	if reply < 0 {
		t.Fatal("no reply with the links")
	}
	const (
		first = "https://github.com/fyne-io/fyne/blob/v2.7.1/widget/richtext.go#L382-L470"
		last  = "https://github.com/pilotdesk/pilotdesk/releases/tag/v0.1.0-rc.1_build-2026-11-24"
	)
	// The list item holding the last link barely in view, at the bottom
	// of the list: the link's line is cut.
	view := tr.list.Size().Height
	tr.list.ScrollToOffset(tr.rowTop(reply) - view + theme.Padding()*2)
	h.frame()
	d := fyne.CurrentApp().Driver()
	inView := func(u string) (top, bottom float32) {
		t.Helper()
		listY := d.AbsolutePositionForObject(tr.list).Y
		for _, a := range linkAreasIn(h.w.Window().Content()) {
			if a.url.String() == u && a.first {
				top = d.AbsolutePositionForObject(a.obj).Y - listY
				return top, top + a.Size().Height
			}
		}
		t.Fatalf("the link %s is not drawn", u)
		return 0, 0
	}
	if _, bottom := inView(last); bottom <= view {
		t.Fatalf("the last link ends at %v in a view %v high before the test: the reply is not cut", bottom, view)
	}

	focusLink(t, h.w.Window(), first)
	h.frame()
	if top, bottom := inView(first); top < 0 || bottom > view {
		t.Fatalf("the first link, in view, is at %v–%v of %v", top, bottom, view)
	}
	// Focused again while in view: nothing moves. (Tab's way to it may
	// pass a row's button the view cuts, which is scrolled into view.)
	c := h.w.Window().Canvas()
	stop := c.Focused()
	before := tr.list.GetScrollOffset()
	c.Focus(h.w.composer)
	c.Focus(stop)
	h.frame()
	if got := tr.list.GetScrollOffset(); got != before {
		t.Fatalf("focusing a link in view scrolled from %v to %v", before, got)
	}

	focusLink(t, h.w.Window(), last)
	h.frame()
	top, bottom := inView(last)
	if top < 0 || bottom > view+0.5 {
		t.Fatalf("the focused last link is at %v–%v, outside the view's 0–%v", top, bottom, view)
	}
	if bottom < view-0.5 {
		t.Fatalf("the list scrolled more than needed: the link ends at %v, the view at %v", bottom, view)
	}
	if focusedLink(h.w.Window().Canvas()) != last {
		t.Fatalf("%s lost the focus when the list scrolled", last)
	}
}
