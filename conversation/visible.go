package conversation

import (
	"fmt"
	"strings"
	"unicode"
)

// Visible shows the characters a reader cannot see as what they are: a
// format character (Unicode's Cf: the bidi controls U+202A–U+202E and
// U+2066–U+2069, zero-width spaces and joiners, U+FEFF, the soft hyphen…)
// or a control character other than a newline or a tab becomes ⟨U+202E⟩.
// An agent's tool arguments, file names and question choices pass through
// it in every front end, so that "\u202Eexe.txt" is not read as
// "txt.exe" and a hidden character cannot make two names look alike
// (docs/reliability.md, issue #33). The web client's words.js has the
// same rule (visible).
func Visible(s string) string { return spellOut(s, invisible) }

// VisibleControls spells out control characters other than a newline or
// a tab as Visible does (⟨U+001B⟩), and leaves format characters be: for
// prose that is printed, not read as a name (an agent's message and
// thoughts, what the user typed, a log line in the terminal), where a
// zero-width joiner is part of an emoji and a right-to-left mark part of
// the writing, but an escape could move a terminal's cursor or recolour
// it. The terminal client prints through it, in the notation the window
// and the web client use for Visible, so that a control character reads
// the same in every front end.
func VisibleControls(s string) string { return spellOut(s, control) }

// spellOut writes each rune of s that hidden reports as ⟨U+XXXX⟩.
func spellOut(s string, hidden func(rune) bool) string {
	if !strings.ContainsFunc(s, hidden) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// invisible reports whether Visible spells r out.
func invisible(r rune) bool {
	if r == '\n' || r == '\t' {
		return false
	}
	return unicode.Is(unicode.Cf, r) || control(r)
}

// control reports whether r is a control character (C0, DEL, C1) other
// than a newline or a tab: what VisibleControls spells out.
func control(r rune) bool {
	return r != '\n' && r != '\t' && unicode.IsControl(r)
}
