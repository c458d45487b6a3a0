package ui

import (
	"fmt"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

const streamedList = "- a reconnecting client asks for what it missed with `sinceSeq` and never shows a delta twice;\n" +
	"- a slow subscriber is disconnected instead of slowing the others down;\n" +
	"- the history on disk is never behind what any client saw, ever, and this line wraps;\n" +
	"- and a last item that goes on for long enough to wrap onto a second line at this width"

// placedTexts lists the texts drawn under o, each with its position in o.
func placedTexts(o fyne.CanvasObject, at fyne.Position) []string {
	var out []string
	switch v := o.(type) {
	case *canvas.Text:
		if v.Text != "" {
			p := at.Add(v.Position())
			out = append(out, fmt.Sprintf("%.1f,%.1f %s", p.X, p.Y, v.Text))
		}
	case *fyne.Container:
		if !v.Visible() {
			return nil
		}
		for _, c := range v.Objects {
			out = append(out, placedTexts(c, at.Add(v.Position()))...)
		}
	case fyne.Widget:
		if !v.Visible() {
			return nil
		}
		for _, c := range test.WidgetRenderer(v).Objects() {
			out = append(out, placedTexts(c, at.Add(v.Position()))...)
		}
	}
	return out
}

// A streaming row draws its blocks exactly where one RichText of them all
// draws them, at every point of the stream, and is as tall.
func TestStreamTextDrawsAsOneRichText(t *testing.T) {
	test.NewTempApp(t)
	md := "Here is what happens to one delta:\n\n" + streamedList + "\n\n## Then\n\nA **paragraph** after the list, with a [link](https://example.com/x) in it."
	words := strings.SplitAfter(md, " ")
	const width = 420
	for i := 1; i <= len(words); i += 3 {
		part := strings.Join(words[:i], "")
		one := widget.NewRichText(parseMarkdown(part)...)
		one.Wrapping = fyne.TextWrapWord
		one.Resize(fyne.NewSize(width, 10))
		one.Resize(fyne.NewSize(width, one.MinSize().Height))
		v := newStreamText()
		v.obj.Resize(fyne.NewSize(width, 10))
		v.set(parseMarkdown(part))
		box := container.NewStack(v.obj) // a row, laid out as the list does
		box.Resize(fyne.NewSize(width, v.obj.MinSize().Height))
		if got, want := v.obj.MinSize().Height, one.MinSize().Height; got != want {
			t.Fatalf("after %q: the blocks need %v, one RichText %v", part, got, want)
		}
		got, want := placedTexts(v.obj, fyne.Position{}), placedTexts(one, fyne.Position{})
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("after %q the blocks draw\n%s\nand one RichText\n%s", part, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// While a list streams, its finished items keep their texts, and laying
// out again what changed (as the window's paint does for a RichText one
// of whose texts changed) refreshes nothing once the item with inline
// code is finished: with one RichText for the whole list, its line of
// several segments was laid out, and refreshed, at every update.
func TestStreamTextRelayoutsOnlyTheGrowingBlock(t *testing.T) {
	base := test.NewTempApp(t)
	counter := &refreshCounter{App: base, drv: &refreshDriver{Driver: base.Driver()}}
	fyne.SetCurrentApp(counter)
	v := newStreamText()
	w := test.NewTempWindow(t, v.obj)
	w.Resize(fyne.NewSize(420, 600))
	words := strings.SplitAfter(streamedList, " ")
	firstDone := strings.Index(streamedList, "\n") + 1
	for i := 1; i <= len(words); i++ {
		part := strings.Join(words[:i], "")
		before := make([]widget.RichTextSegment, len(v.texts))
		for k, rt := range v.texts {
			if len(rt.Segments) > 0 {
				before[k] = rt.Segments[0]
			}
		}
		v.set(parseMarkdown(part))
		v.obj.Refresh()
		counter.drv.n = 0
		changed := 0
		for k, rt := range v.texts {
			if k < len(before) && len(rt.Segments) > 0 && rt.Segments[0] == before[k] {
				continue // not given again: nothing in it to lay out
			}
			changed++
			test.TempWidgetRenderer(t, rt).Layout(rt.Size())
		}
		if len(part) > firstDone+len("- a slow") {
			if v.texts[0].Segments[0] != before[0] {
				t.Fatalf("after %q, the finished first item was given its segments again", part)
			}
			if changed > 2 {
				t.Fatalf("after %q, %d blocks were given their segments again", part, changed)
			}
			if counter.drv.n != 0 {
				t.Fatalf("after %q, laying the changed block out again refreshed %d objects", part, counter.drv.n)
			}
		}
	}
}

// rowText is the text a text row's view shows: its streaming blocks'
// while it streams, else its RichText's.
func rowText(s *rowState) string {
	if s.stream != nil && s.cur == s.stream.obj {
		var b strings.Builder
		for _, rt := range s.stream.texts {
			if rt.Visible() {
				b.WriteString(rt.String())
			}
		}
		return b.String()
	}
	return s.text.String()
}

// shownCode is the code view showing the transcript's code row, if any.
func shownCode(h *harness) *codeView {
	for _, s := range h.w.transcript.views {
		if s.code != nil && s.cur == s.code.obj && s.key.gen == h.w.transcript.gen {
			return s.code
		}
	}
	return nil
}

// A code block is drawn in one colour, one segment, while it streams, and
// highlighted once its fence closes.
func TestStreamingCodeIsHighlightedWhenDone(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	apply := applyFrom(h, h.w.current, 0)
	apply(&protocol.UserMessage{MessageID: "u", Content: "code"})
	apply(&protocol.Delta{MessageID: "m", Content: "Here:\n\n```go\nfunc main() {\n\tfmt.Println(\"hi\")\n"})
	h.frame()
	v := shownCode(h)
	if v == nil {
		t.Fatal("no code row on screen")
	}
	if len(v.code.Segments) != 1 || !strings.Contains(v.code.String(), "fmt.Println") {
		t.Fatalf("the streaming code is drawn in %d segments: %q", len(v.code.Segments), v.code.String())
	}
	apply(&protocol.Delta{MessageID: "m", Content: "}\n```\n\nThat is all."})
	h.frame()
	if v = shownCode(h); v == nil || len(v.code.Segments) < 3 || !strings.HasSuffix(v.code.String(), "}") {
		t.Fatalf("the finished code is not highlighted: %+v", v)
	}
}

// When a streaming text row is done, the row shows one RichText again,
// as wide as the row, with the whole text.
func TestStreamedTextRowWhenDone(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	apply := applyFrom(h, h.w.current, 0)
	apply(&protocol.UserMessage{MessageID: "u", Content: "list"})
	apply(&protocol.Delta{MessageID: "m", Content: "Steps:\n\n- one with `code`\n- two"})
	h.frame()
	find := func() *rowState {
		last := len(h.w.transcript.rows) - 1
		for _, s := range h.w.transcript.views {
			if s.key.id == last && s.key.gen == h.w.transcript.gen && s.cur != nil && s.cur.Visible() {
				return s
			}
		}
		return nil
	}
	s := find()
	if s == nil || s.stream == nil || s.cur != s.stream.obj {
		t.Fatal("the streaming list is not drawn as streaming blocks")
	}
	apply(&protocol.Delta{MessageID: "m", Content: " and three\n\nDone."})
	apply(&protocol.Idle{Status: protocol.StatusCompleted})
	h.frame()
	for i, r := range h.w.transcript.rows {
		if r.Kind != conversation.RowText || !strings.HasPrefix(r.Text, "- one") {
			continue
		}
		for _, v := range h.w.transcript.views {
			if v.key.id != i || v.key.gen != h.w.transcript.gen {
				continue
			}
			if v.cur != v.text || !r.Done {
				t.Fatalf("the finished list is drawn by %T (done %v)", v.cur, r.Done)
			}
			if got := describe(v.text.Segments); !strings.Contains(got, "two and three") {
				t.Fatalf("the finished list shows %q", got)
			}
			if w := v.text.Size().Width; w != h.w.transcript.width {
				t.Fatalf("the finished list is %v wide, the row %v", w, h.w.transcript.width)
			}
			return
		}
	}
	t.Fatalf("the finished list is not on screen:\n%s", h.dump())
}
