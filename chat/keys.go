package chat

import "unicode/utf8"

// keyKind names a key the REPL reacts to in raw mode.
type keyKind int

const (
	keyRune keyKind = iota // a printable character, in key.r
	keyEnter
	keyBackspace
	keyUp
	keyDown
	keyLeft
	keyRight
	keyHome
	keyEnd
	keyDelete
	keyTab
	keyCtrlC
	keyCtrlD
	keyCtrlU // kill the line
	keyCtrlW // kill the last word
	keyCtrlL // redraw
	keyEsc
	keyUnknown // a control byte or escape sequence the REPL ignores
)

type key struct {
	kind keyKind
	r    rune
}

// keyDecoder turns the bytes a terminal in raw mode sends into keys. A read
// may end in the middle of an escape sequence or a UTF-8 character: the
// decoder keeps the incomplete tail for the next read.
type keyDecoder struct {
	pending []byte
	afterCR bool // the last byte was CR: an LF right after it is the same Enter
}

// feed decodes b (appended to what is pending) and returns the complete keys.
func (d *keyDecoder) feed(b []byte) []key {
	buf := append(d.pending, b...)
	d.pending = nil
	var keys []key
	for len(buf) > 0 {
		c := buf[0]
		if c == '\n' && d.afterCR {
			d.afterCR = false
			buf = buf[1:]
			continue
		}
		d.afterCR = c == '\r'
		switch {
		case c == 0x1b:
			k, n, complete := decodeEscape(buf)
			if !complete {
				d.pending = append([]byte(nil), buf...)
				return keys
			}
			keys = append(keys, k)
			buf = buf[n:]
			continue
		case c < 0x20 || c == 0x7f:
			keys = append(keys, key{kind: controlKey(c)})
			buf = buf[1:]
			continue
		}
		if !utf8.FullRune(buf) {
			d.pending = append([]byte(nil), buf...)
			return keys
		}
		r, n := utf8.DecodeRune(buf)
		buf = buf[n:]
		if r == utf8.RuneError && n == 1 {
			keys = append(keys, key{kind: keyUnknown})
			continue
		}
		keys = append(keys, key{kind: keyRune, r: r})
	}
	return keys
}

func controlKey(c byte) keyKind {
	switch c {
	case '\r', '\n':
		return keyEnter
	case 0x7f, 0x08:
		return keyBackspace
	case 0x03:
		return keyCtrlC
	case 0x04:
		return keyCtrlD
	case 0x15:
		return keyCtrlU
	case 0x17:
		return keyCtrlW
	case 0x0c:
		return keyCtrlL
	case 0x09:
		return keyTab
	case 0x01:
		return keyHome
	case 0x05:
		return keyEnd
	}
	return keyUnknown
}

// decodeEscape decodes the escape sequence at the start of b (b[0] is ESC).
// It returns the key, the bytes it took, and false when b ends before the
// sequence does.
func decodeEscape(b []byte) (key, int, bool) {
	if len(b) < 2 {
		return key{}, 0, false
	}
	switch b[1] {
	case '[':
		// CSI: parameter bytes 0x30–0x3F, intermediate bytes 0x20–0x2F,
		// then one final byte 0x40–0x7E.
		i := 2
		for i < len(b) && b[i] >= 0x20 && b[i] <= 0x3f {
			i++
		}
		if i == len(b) {
			return key{}, 0, false
		}
		final := b[i]
		if final < 0x40 || final > 0x7e {
			// Not a well-formed sequence: drop the ESC [ and go on.
			return key{kind: keyUnknown}, 2, true
		}
		params := string(b[2:i])
		return key{kind: csiKey(final, params)}, i + 1, true
	case 'O':
		// SS3, sent for the arrows in "application cursor" mode.
		if len(b) < 3 {
			return key{}, 0, false
		}
		return key{kind: csiKey(b[2], "")}, 3, true
	}
	// ESC alone, or ESC before another key (Alt+key): report Esc and let the
	// next byte decode on its own.
	return key{kind: keyEsc}, 1, true
}

func csiKey(final byte, params string) keyKind {
	switch final {
	case 'A':
		return keyUp
	case 'B':
		return keyDown
	case 'C':
		return keyRight
	case 'D':
		return keyLeft
	case 'H':
		return keyHome
	case 'F':
		return keyEnd
	case '~':
		switch params {
		case "1", "7":
			return keyHome
		case "4", "8":
			return keyEnd
		case "3":
			return keyDelete
		}
	}
	return keyUnknown
}
