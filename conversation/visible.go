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
func Visible(s string) string {
	if !strings.ContainsFunc(s, invisible) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if invisible(r) {
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
	return unicode.Is(unicode.Cf, r) || unicode.IsControl(r)
}
