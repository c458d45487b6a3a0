package chat

import "unicode"

// editor is the line being typed in raw mode. The cursor is always at the
// end of the line: the REPL's inputs are short (a prompt, a number, a
// command), and a fixed cursor keeps redrawing exact on every terminal.
type editor struct {
	buf []rune

	// history of submitted lines, oldest first; histPos is the entry shown
	// by Up/Down (len(history) when none is).
	history []string
	histPos int
	draft   string // the line being typed before Up was pressed
}

func (e *editor) String() string { return string(e.buf) }

func (e *editor) empty() bool { return len(e.buf) == 0 }

func (e *editor) insert(r rune) { e.buf = append(e.buf, r) }

func (e *editor) backspace() {
	if len(e.buf) > 0 {
		e.buf = e.buf[:len(e.buf)-1]
	}
}

func (e *editor) clear() { e.buf = e.buf[:0] }

// killWord removes the last word and the spaces after it (Ctrl+W).
func (e *editor) killWord() {
	i := len(e.buf)
	for i > 0 && unicode.IsSpace(e.buf[i-1]) {
		i--
	}
	for i > 0 && !unicode.IsSpace(e.buf[i-1]) {
		i--
	}
	e.buf = e.buf[:i]
}

// submit returns the line, empties the editor and, when remember is set and
// the line is not blank, adds it to the history.
func (e *editor) submit(remember bool) string {
	line := string(e.buf)
	e.buf = e.buf[:0]
	if remember && line != "" && (len(e.history) == 0 || e.history[len(e.history)-1] != line) {
		e.history = append(e.history, line)
	}
	e.histPos = len(e.history)
	e.draft = ""
	return line
}

// older shows the previous history entry (Up).
func (e *editor) older() {
	if e.histPos == 0 {
		return
	}
	if e.histPos == len(e.history) {
		e.draft = string(e.buf)
	}
	e.histPos--
	e.buf = []rune(e.history[e.histPos])
}

// newer shows the next history entry, or the draft after the last (Down).
func (e *editor) newer() {
	if e.histPos >= len(e.history) {
		return
	}
	e.histPos++
	if e.histPos == len(e.history) {
		e.buf = []rune(e.draft)
		return
	}
	e.buf = []rune(e.history[e.histPos])
}
