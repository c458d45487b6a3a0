package ui

import (
	"fmt"
	"sync"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// fontRecorder is a theme that notes the text styles whose font is asked
// for: Fyne asks the theme when it first measures or draws text in a style,
// and then parses that style's faces and keeps them.
type fontRecorder struct {
	fyne.Theme
	mu     sync.Mutex
	styles map[fyne.TextStyle]bool
}

func (r *fontRecorder) Font(s fyne.TextStyle) fyne.Resource {
	r.mu.Lock()
	r.styles[s] = true
	r.mu.Unlock()
	return r.Theme.Font(s)
}

func (r *fontRecorder) asked(s fyne.TextStyle) bool {
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
	rec := &fontRecorder{Theme: theme.DefaultTheme(), styles: map[fyne.TextStyle]bool{}}
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
	if !rec.asked(fyne.TextStyle{Monospace: true}) {
		t.Fatal("no font asked for the code: the recorder sees nothing")
	}
	for _, s := range []fyne.TextStyle{{Italic: true}, {Italic: true, Bold: true}} {
		if rec.asked(s) {
			t.Errorf("the window loaded the faces of %+v", s)
		}
	}
}
