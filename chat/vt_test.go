package chat

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// vt is a minimal terminal emulator for tests: enough of a VT100 to play
// the REPL's output (text, CR, LF, cursor up, column, erase below, erase
// line, SGR ignored) and read the screen back, so that tests check what a
// person would see, not the bytes. Lines wrap as xterm does: writing the
// last column leaves the cursor there until the next character.
type vt struct {
	width   int
	lines   [][]rune
	row     int
	col     int
	pending bool // the last column was written: the next character wraps
}

func newVT(width int) *vt { return &vt{width: width, lines: [][]rune{nil}} }

func (v *vt) Write(p []byte) (int, error) {
	s := string(p)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b && i+1 < len(s) && s[i+1] == '[':
			j := i + 2
			for j < len(s) && s[j] >= 0x20 && s[j] <= 0x3f {
				j++
			}
			if j < len(s) {
				v.csi(s[i+2:j], s[j])
			}
			i = j + 1
			continue
		case c == '\r':
			v.col, v.pending = 0, false
		case c == '\n':
			v.row++
			v.pending = false
			v.ensure()
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			v.put(r)
			i += size
			continue
		}
		i++
	}
	return len(p), nil
}

func (v *vt) ensure() {
	for len(v.lines) <= v.row {
		v.lines = append(v.lines, nil)
	}
}

func (v *vt) put(r rune) {
	if v.pending {
		v.row++
		v.col = 0
		v.pending = false
		v.ensure()
	}
	line := v.lines[v.row]
	for len(line) <= v.col {
		line = append(line, ' ')
	}
	line[v.col] = r
	v.lines[v.row] = line
	if v.col == v.width-1 {
		v.pending = true
	} else {
		v.col++
	}
}

func (v *vt) csi(params string, final byte) {
	n := 1
	if params != "" {
		if x, err := strconv.Atoi(params); err == nil {
			n = x
		}
	}
	switch final {
	case 'A':
		v.row = max(0, v.row-n)
		v.pending = false
	case 'G':
		v.col = min(n-1, v.width-1)
		v.pending = false
	case 'J': // erase below (and the rest of this line)
		if v.col < len(v.lines[v.row]) {
			v.lines[v.row] = v.lines[v.row][:v.col]
		}
		v.lines = v.lines[:v.row+1]
	case 'K':
		if v.col < len(v.lines[v.row]) {
			v.lines[v.row] = v.lines[v.row][:v.col]
		}
	}
}

// screen returns the screen's lines, trailing spaces and empty last lines
// trimmed.
func (v *vt) screen() []string {
	out := make([]string, len(v.lines))
	for i, l := range v.lines {
		out[i] = strings.TrimRight(string(l), " ")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func (v *vt) String() string { return strings.Join(v.screen(), "\n") }
