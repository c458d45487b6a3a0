package ui

import (
	"fmt"
	"sync"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// fontRecorder is a theme that notes the text styles whose font is asked
// for: Fyne asks the theme when it first measures or draws text in a style,
// and then parses that style's faces and keeps them.
type fontRecorder struct {
	fyne.Theme
	mu     sync.Mutex
	styles map[fyne.TextStyle]int
}

func (r *fontRecorder) Font(s fyne.TextStyle) fyne.Resource {
	r.mu.Lock()
	r.styles[s]++
	r.mu.Unlock()
	return r.Theme.Font(s)
}

// asked is how many times the font of s was asked for: Fyne keeps the
// faces it parsed per theme override, so a style drawn inside an override
// and outside it is asked for, and parsed, twice.
func (r *fontRecorder) asked(s fyne.TextStyle) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.styles[s]
}

// A long conversation of prompts and replies with markdown (bold, inline
// code) and code blocks, opened, has Fyne load the faces of the styles the
// window has loaded anyway (regular and bold) and monospace for the code,
// and no italic: each style's faces (the theme's and the system fallback
// Fyne adds to it) are parsed the first time text is measured in it and
// kept, 3.6 MB of Go heap for italic, which the code blocks' language label
// and the estimate of a mode change's height cost every such conversation.
func TestCodeConversationLoadsNoItalic(t *testing.T) {
	rec := &fontRecorder{Theme: theme.DefaultTheme(), styles: map[fyne.TextStyle]int{}}
	h := newHarness(t, harnessConfig{theme: rec})
	apply := applyFrom(h, h.w.current, 0)
	const reply = "The change is small, and `go test` passes:\n\n```go\nfor _, b := range blocks {\n\tb.segs = parse(b.text)\n}\n```\n\nWith that, a **long** reply costs the same per token."
	for i := range 2 * bulkHeights {
		apply(&protocol.UserMessage{MessageID: fmt.Sprint("u", i), Content: "next step", Mode: protocol.ModeAct})
		apply(&protocol.Message{MessageID: fmt.Sprint("m", i), Content: reply})
		apply(&protocol.Idle{Status: protocol.StatusCompleted})
	}
	h.frame()
	if len(h.w.transcript.rows) <= bulkHeights || shownCode(h) == nil {
		t.Fatalf("%d rows, code on screen: %v", len(h.w.transcript.rows), shownCode(h) != nil)
	}
	if rec.asked(fyne.TextStyle{Monospace: true}) == 0 {
		t.Fatal("no font asked for the code: the recorder sees nothing")
	}
	for _, s := range []fyne.TextStyle{{Italic: true}, {Italic: true, Bold: true}} {
		if rec.asked(s) > 0 {
			t.Errorf("the window loaded the faces of %+v", s)
		}
	}
}

// Plan mode's banner draws its bold words in the banner's colour without a
// theme override of its own: Fyne parses a style's faces once per override
// it is drawn in, and the bold Noto and DejaVu faces parsed again for the
// banner were 4 MB of Go heap, kept from the first switch to Plan on.
func TestPlanBannerLoadsNoFacesAgain(t *testing.T) {
	rec := &fontRecorder{Theme: theme.DefaultTheme(), styles: map[fyne.TextStyle]int{}}
	h := newHarness(t, harnessConfig{theme: rec})
	h.waitAgents()
	h.frame()
	h.w.Window().Content().Refresh()
	// Fyne's painter takes the faces of a text's scope when it draws the
	// text (measuring takes the app's): Capture draws the window as the
	// GL painter does.
	h.w.Window().Canvas().Capture()
	bold := fyne.TextStyle{Bold: true}
	before := rec.asked(bold)
	if before == 0 {
		t.Fatal("no bold face asked for before Plan: the recorder sees nothing")
	}
	test.Tap(h.w.mode.toggle.plan)
	h.frame()
	h.w.Window().Content().Refresh()
	h.w.Window().Canvas().Capture()
	if !h.w.mode.banner.Visible() {
		t.Fatal("no plan banner")
	}
	if got := rec.asked(bold); got != before {
		t.Fatalf("the banner had the bold faces loaded again: asked %d times, %d before it", got, before)
	}
}
