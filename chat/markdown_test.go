package chat

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
)

var update = flag.Bool("update", false, "rewrite chat/testdata/*.golden from this run")

// replyOutput plays one agent reply, streamed as the deltas chunks, on a
// REPL with the terminal term, and returns what it printed for the reply:
// the bytes between the prompt's line and the turn's usage line.
func replyOutput(t *testing.T, term Terminal, chunks []string) string {
	t.Helper()
	h := startREPL(t, term, nil)
	h.subscribed(nil)
	h.emit(protocol.TypeUserMessage, map[string]any{"messageId": "u1", "content": "notes", "mode": "act"})
	for _, c := range chunks {
		h.delta(c)
	}
	h.emit(protocol.TypeMessage, map[string]any{"messageId": "m1", "content": strings.Join(chunks, "")})
	h.idle(protocol.StatusCompleted)
	h.waitFor("usage: none reported for this turn")
	out := strings.ReplaceAll(h.out.bytes(), "\r\n", "\n")
	_, out, ok := strings.Cut(out, "notes\n")
	if !ok {
		t.Fatalf("no prompt line in %q", h.out.bytes())
	}
	i := strings.Index(out, "usage: none")
	return out[:strings.LastIndex(out[:i], "\n")+1]
}

// colour is a colour terminal 60 columns wide that is not redrawn (no
// footer): the transcript's bytes are the rendered markdown alone.
var colour = Terminal{Color: true, Width: func() int { return 60 }}

func readSample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "markdown.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// visibleEscapes shows ESC as ␛, so that a golden file reads as text.
func visibleEscapes(s string) string { return strings.ReplaceAll(s, "\x1b", "␛") }

// TestMarkdownRendered checks a reply's markdown as a colour terminal shows
// it (testdata/markdown.golden, ESC written ␛): headings, emphasis, a link
// with its address, lists nested and numbered, task boxes, a quote, a Go
// code block highlighted in the terminal's colours, a table, a rule, text
// wrapped at the terminal's width.
func TestMarkdownRendered(t *testing.T) {
	md := readSample(t)
	got := visibleEscapes(replyOutput(t, colour, []string{md}))
	golden := filepath.Join("testdata", "markdown.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("rendered markdown differs from %s; got:\n%s", golden, got)
	}
	for _, raw := range []string{"**", "`", "##", "](", "~~", "|"} {
		if strings.Contains(got, raw) {
			t.Errorf("the rendered reply still shows %q", raw)
		}
	}
	for _, l := range strings.Split(replyOutput(t, colour, []string{md}), "\n") {
		if w := visibleWidth(l); w > 60 {
			t.Errorf("a line is %d columns wide, wider than the terminal's 60: %q", w, l)
		}
	}
}

// TestMarkdownPlainWhenPiped: without colours (stdout not a terminal, or
// NO_COLOR) the reply is printed as the agent wrote it, every byte.
func TestMarkdownPlainWhenPiped(t *testing.T) {
	md := readSample(t)
	for _, term := range []Terminal{plain, {Raw: true, Live: true}} {
		got := replyOutput(t, term, splitEvery(md, 5))
		got = strings.ReplaceAll(ansi.ReplaceAllString(got, ""), "\r", "")
		want := md
		if term.Live {
			// A live terminal's tabs are spaces (the REPL knows its column).
			want = strings.ReplaceAll(md, "\t", "        ")
		}
		if got != want {
			t.Errorf("Live=%v: the reply is not printed as written:\n%q\nwant\n%q", term.Live, got, want)
		}
	}
}

// TestMarkdownStreamedSplits: however the deltas cut the reply (inside a
// fence's backticks, inside the code, mid-word, between the two line feeds
// of a blank line, one character at a time) the terminal shows what the
// whole message shows, each line once.
func TestMarkdownStreamedSplits(t *testing.T) {
	md := readSample(t)
	whole := replyOutput(t, colour, []string{md})
	at := func(subs ...string) []string { // cut just inside each of subs
		var chunks []string
		rest := md
		for _, s := range subs {
			i := strings.Index(rest, s)
			if i < 0 {
				t.Fatalf("%q is not in the sample", s)
			}
			cut := i + len(s)/2
			chunks = append(chunks, rest[:cut])
			rest = rest[cut:]
		}
		return append(chunks, rest)
	}
	splits := map[string][]string{
		"in the fence's backticks and the code": at("```go", "range", "```\n"),
		"mid-word and mid-emphasis":             at("Release", "**bold**", "detector"),
		"between a blank line's line feeds":     at("wrap.\n\n", "long.\n\n"),
		"every 7 characters":                    splitEvery(md, 7),
		"every character":                       splitEvery(md, 1),
	}
	for name, chunks := range splits {
		if got := replyOutput(t, colour, chunks); got != whole {
			t.Errorf("split %s: the terminal shows\n%s\nwant (the whole message)\n%s", name, visibleEscapes(got), visibleEscapes(whole))
		}
	}
}

// splitEvery cuts s into pieces of n characters.
func splitEvery(s string, n int) []string {
	var out []string
	r := []rune(s)
	for len(r) > n {
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	return append(out, string(r))
}

// TestMarkdownStreamsBlockByBlock: on a live colour terminal a reply's
// blocks go into the transcript each once it is whole; the block under way
// shows in the footer as it stands, above the spinner's "writing…". A tool
// call in the middle of a sentence prints the sentence as far as it came
// above the tool's line, and the rest below it, nothing twice.
func TestMarkdownStreamsBlockByBlock(t *testing.T) {
	h := startREPL(t, Terminal{Raw: true, Live: true, Color: true, Spinner: true}, nil)
	h.subscribed(nil)
	h.typeIn("notes\r")
	h.nextCall("send")
	h.emit(protocol.TypeUserMessage, map[string]any{"messageId": "u1", "content": "notes", "mode": "act"})
	h.delta("## Plan\n\nFirst I will re")
	h.waitScreen("the heading, the paragraph under way in the footer", func(s string) bool {
		return strings.HasSuffix(s, "act> notes\nPlan\n\nFirst I will re\n⠋ writing…")
	})
	h.delta("ad **the code**.\n\n```go\nx := 1\n")
	h.waitScreen("the paragraph, the code under way", func(s string) bool {
		return strings.HasSuffix(s, "Plan\n\nFirst I will read the code.\n\n  x := 1\n⠋ writing…")
	})
	h.delta("```\nLet me look")
	h.waitScreen("the code", func(s string) bool { return strings.HasSuffix(s, "  x := 1\n\nLet me look\n⠋ writing…") })
	h.emit(protocol.TypeToolStart, map[string]any{"toolCallId": "t1", "toolName": "view", "arguments": map[string]any{"path": "go.mod"}})
	h.emit(protocol.TypeToolEnd, map[string]any{"toolCallId": "t1", "success": true, "result": "module x"})
	h.delta(" again: all *good*.")
	h.emit(protocol.TypeMessage, map[string]any{"messageId": "m1", "content": "## Plan\n\nFirst I will read **the code**.\n\n```go\nx := 1\n```\nLet me look again: all *good*."})
	h.idle(protocol.StatusCompleted)
	screen := h.waitScreen("the turn's end", func(s string) bool { return strings.Contains(s, "usage:") })
	want := "Plan\n\nFirst I will read the code.\n\n  x := 1\n\nLet me look\n⚙ view go.mod — approved → module x\nagain: all good.\nusage:"
	if !strings.Contains(screen, want) {
		t.Errorf("the screen is\n%s\nwant it to hold\n%s", screen, want)
	}
	if n := strings.Count(screen, "First I will re"); n != 1 {
		t.Errorf("the paragraph shows %d times:\n%s", n, screen)
	}
	if raw := h.out.bytes(); !strings.Contains(raw, "\x1b[1mthe code\x1b[0m") || !strings.Contains(raw, "\x1b[3mgood\x1b[0m") {
		t.Errorf("the emphasis is not styled: %q", raw)
	}
}

// TestMarkdownPreviewKeepsToTheFooter: a long block under way shows only
// its last rows in the footer (a footer taller than the screen could not be
// redrawn), and all of it once it is done.
func TestMarkdownPreviewKeepsToTheFooter(t *testing.T) {
	h := startREPL(t, Terminal{Raw: true, Live: true, Color: true, Spinner: true}, nil)
	h.subscribed(nil)
	h.typeIn("code\r")
	h.nextCall("send")
	h.emit(protocol.TypeUserMessage, map[string]any{"messageId": "u1", "content": "code", "mode": "act"})
	var code strings.Builder
	for _, name := range strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango") {
		code.WriteString("x = " + name + "\n")
	}
	h.delta("```\n" + code.String())
	h.waitScreen("the last 8 lines of the code", func(s string) bool {
		return strings.HasSuffix(s, "act> code\n  x = mike\n  x = november\n  x = oscar\n  x = papa\n  x = quebec\n  x = romeo\n  x = sierra\n  x = tango\n⠋ writing…")
	})
	h.delta("```\n")
	h.emit(protocol.TypeMessage, map[string]any{"messageId": "m1", "content": "```\n" + code.String() + "```\n"})
	h.idle(protocol.StatusCompleted)
	screen := h.waitScreen("the turn's end", func(s string) bool { return strings.Contains(s, "usage:") })
	if !strings.Contains(screen, "act> code\n  x = alpha\n  x = bravo\n") || strings.Count(screen, "x = tango") != 1 {
		t.Errorf("the code block is not printed whole, once:\n%s", screen)
	}
}

// TestMarkdownControlCharacters: rendering adds styles of its own, never
// the agent's: escape sequences in text, inline code, a link's address and
// a code block show as ⟨U+001B⟩ (conversation.VisibleControls) and move
// nothing.
func TestMarkdownControlCharacters(t *testing.T) {
	md := "Hi \x1b[31mred\x1b[0m and `\x1b[2J` [x](http://a/\x1b[H)\n\n```go\nx := \"\x1b]0;title\x07\"\n```\n"
	got := replyOutput(t, colour, []string{md})
	for _, bad := range []string{"\x1b[31m", "\x1b[2J", "\x1b[H", "\x1b]0", "\x07"} {
		if strings.Contains(got, bad) {
			t.Errorf("the agent's %q reached the terminal: %q", bad, got)
		}
	}
	for _, shown := range []string{"⟨U+001B⟩[31mred⟨U+001B⟩[0m", "⟨U+001B⟩[2J", "http://a/⟨U+001B⟩[H", "⟨U+001B⟩]0;title⟨U+0007⟩"} {
		if !strings.Contains(got, shown) {
			t.Errorf("%q is not shown: %q", shown, got)
		}
	}
}
