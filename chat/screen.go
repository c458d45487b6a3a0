package chat

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"

	"github.com/pilotdesk/pilotdesk/conversation"
)

// Terminal says what the REPL may do with its input and output. The
// command line fills it from the real terminal; tests fill it by hand.
type Terminal struct {
	// Raw: In delivers keys one at a time, unechoed (a terminal in raw
	// mode), so the REPL edits the line itself and sees arrow keys, Ctrl+C
	// and Ctrl+D as bytes.
	Raw bool
	// Live: Out is a terminal the REPL may redraw. The bottom of the screen
	// (the "footer") then holds what changes in place: the spinner, the
	// prompt while text streams above it, a choice list's moving pointer.
	// Without it every line is printed once and never touched again.
	Live bool
	// Color allows ANSI colours (off when NO_COLOR is set or Out is not a
	// terminal).
	Color bool
	// Spinner animates a spinner until the first token (Live only).
	Spinner bool
	// Width returns the terminal's columns; nil, or a result below 1,
	// means 80.
	Width func() int
}

func (t Terminal) width() int {
	if t.Width != nil {
		if w := t.Width(); w > 0 {
			return w
		}
	}
	return 80
}

// ANSI styles. The REPL's colours (docs/cli.md, Answering questions): the
// info colour for choice numbers, the approve label and the text prompt
// glyph; the error colour for the reject label.
const (
	styleInfo  = "36" // cyan
	styleError = "31" // red
	styleWarn  = "33" // amber: hints, plan mode
	styleOK    = "32" // green
	styleDim   = "2"
	styleBold  = "1"
)

// screen writes the REPL's output. The transcript (everything said, in
// order) is only ever appended to; the footer below it is redrawn in place
// when the terminal is Live. Output is batched and written by flush, once per
// event, so a redraw reaches the terminal in one write.
type screen struct {
	term Terminal
	w    io.Writer
	out  bytes.Buffer

	// col is the number of columns written on the transcript's unfinished
	// last line (it may exceed the width: the line wrapped). 0 means the
	// cursor is at the start of a fresh line.
	col int

	// brokeLine: the last thing written was one of the REPL's own lines
	// (a tool call, an answer, a note), which ended the agent's line for it;
	// the agent's own line feed right after is then one too many.
	brokeLine bool

	md mdView // the agent's markdown, on a colour terminal

	footer      []string // the footer on the screen; nil when none is
	footerUp    int      // rows from the footer's first row up to the cursor
	footerBelow bool     // the footer starts on the row after an unfinished transcript line
}

func newScreen(w io.Writer, t Terminal) *screen { return &screen{w: w, term: t} }

func (s *screen) nl() string {
	if s.term.Live {
		// Raw mode turns off the terminal's output processing, so a line
		// feed must bring its own carriage return.
		return "\r\n"
	}
	return "\n"
}

// style wraps text in an ANSI style when colours are on.
func (s *screen) style(code, text string) string {
	if !s.term.Color || code == "" || text == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// text appends assistant text to the transcript as it streams.
func (s *screen) text(t string) {
	s.clearFooter()
	if s.brokeLine {
		t = strings.TrimPrefix(strings.TrimPrefix(t, "\r"), "\n")
	}
	if t != "" {
		s.brokeLine = false
	}
	s.writeTranscript(t)
}

// endLine finishes an unfinished transcript line (a question, for one, starts
// on a line of its own: docs/cli.md, Answering questions). A markdown block
// still streaming is printed first, as far as it came: what follows it in
// the transcript goes below it.
func (s *screen) endLine() {
	s.flushMarkdown()
	s.endTextLine()
}

func (s *screen) endTextLine() {
	s.clearFooter()
	if s.col > 0 {
		s.out.WriteString(s.nl())
		s.col = 0
	}
}

// line prints one whole line on a line of its own. It may carry styles (it
// is the REPL's own text); what the agent or the relay said goes through
// sanitize first.
func (s *screen) line(l string) {
	s.endLine()
	s.out.WriteString(l)
	s.out.WriteString(s.nl())
	s.brokeLine = true
	s.md.afterBlock = false
}

// blank prints an empty line.
func (s *screen) blank() { s.line("") }

// writeTranscript writes agent text: control characters are made visible
// (an agent must not be able to move the cursor or change colours), line
// feeds become the terminal's, tabs are expanded on a live terminal so that
// the REPL knows where the cursor is.
func (s *screen) writeTranscript(t string) {
	w := s.term.width()
	for _, r := range t {
		switch {
		case r == '\n':
			s.out.WriteString(s.nl())
			s.col = 0
		case r == '\r':
			// "\r\n" is a line feed; a lone CR would overwrite the line.
		case r == '\t':
			if !s.term.Live {
				s.out.WriteByte('\t')
				s.col = (s.col/8 + 1) * 8
				continue
			}
			n := 8 - (s.col%w)%8
			s.out.WriteString(strings.Repeat(" ", n))
			s.col += n
		case isControl(r):
			c := conversation.VisibleControls(string(r))
			s.out.WriteString(c)
			s.col += utf8.RuneCountInString(c)
		default:
			s.out.WriteRune(r)
			s.col += runeWidth(r)
		}
	}
}

// sanitize makes control characters in text from the agent or the relay
// visible, for text printed with line, as every front end spells them
// (conversation.VisibleControls: an escape is ⟨U+001B⟩).
func sanitize(t string) string { return conversation.VisibleControls(t) }

// oneLine is sanitize for text that must stay on one line.
func oneLine(t string) string {
	t = strings.ReplaceAll(strings.TrimSpace(t), "\r\n", "\n")
	return sanitize(strings.ReplaceAll(t, "\n", " ⏎ "))
}

// isControl reports whether writeTranscript spells r out: what
// conversation.VisibleControls does (a newline and a tab are handled
// before it), asked without a string per rune of the agent's text.
func isControl(r rune) bool {
	return r != '\n' && r != '\t' && unicode.IsControl(r)
}

// runeWidth is the number of columns r takes on a terminal.
func runeWidth(r rune) int {
	switch {
	case r < 0x20 || r == 0x7f:
		return 0
	case r == 0x200b || r == 0x200d || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// visibleWidth is the number of columns s takes, ANSI styles excluded.
func visibleWidth(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && s[j] >= 0x20 && s[j] <= 0x3f {
				j++
			}
			i = j + 1
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		n += runeWidth(r)
		i += size
	}
	return n
}

// rows is how many terminal rows a line of w columns takes.
func rows(w, cols int) int {
	if w <= 0 {
		return 1
	}
	return (w + cols - 1) / cols
}

// showFooter makes the footer read lines: it redraws only when they
// changed. The cursor ends at the end of the last line, where the user
// types. Without a Live terminal there is no footer.
func (s *screen) showFooter(lines []string) {
	if !s.term.Live {
		return
	}
	if s.footer != nil && slices.Equal(s.footer, lines) {
		return
	}
	s.clearFooter()
	if len(lines) == 0 {
		return
	}
	w := s.term.width()
	s.footerBelow = s.col > 0
	if s.footerBelow {
		s.out.WriteString("\r\n")
	}
	up := 0
	for i, l := range lines {
		if i > 0 {
			s.out.WriteString("\r\n")
		}
		s.out.WriteString(l)
		lw := visibleWidth(l)
		if i < len(lines)-1 {
			up += rows(lw, w)
		} else if lw > 0 {
			// A line of exactly w columns leaves the cursor on its last
			// column (the terminal wraps only when the next one comes).
			up += (lw - 1) / w
		}
	}
	s.footer = slices.Clone(lines)
	s.footerUp = up
}

// clearFooter erases the footer and puts the cursor back at the end of the
// transcript.
func (s *screen) clearFooter() {
	if s.footer == nil {
		return
	}
	s.out.WriteString("\r")
	if s.footerUp > 0 {
		fmt.Fprintf(&s.out, "\x1b[%dA", s.footerUp)
	}
	s.out.WriteString("\x1b[J")
	if s.footerBelow {
		w := s.term.width()
		// Back to the end of the unfinished line above. When that line
		// filled its last row exactly, the next character belongs at the
		// start of the row the footer took, where the cursor already is.
		if c := s.col % w; c != 0 {
			fmt.Fprintf(&s.out, "\x1b[A\x1b[%dG", c+1)
		}
	}
	s.footer = nil
	s.footerUp = 0
	s.footerBelow = false
}

// flush writes what was batched.
func (s *screen) flush() error {
	if s.out.Len() == 0 {
		return nil
	}
	_, err := s.w.Write(s.out.Bytes())
	s.out.Reset()
	if err != nil {
		return fmt.Errorf("writing to the terminal: %w", err)
	}
	return nil
}
