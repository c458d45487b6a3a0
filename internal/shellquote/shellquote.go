// Package shellquote writes a word of a command line shown to the user so
// that a POSIX shell reads it back as one word, as typed: the words of a
// tool's command, the file a token is read from, the folders of the git
// commands that put a removed worktree back.
package shellquote

import "strings"

// Word is w as it is when a shell would neither split nor expand it,
// else in single quotes (a quote in it written '\”).
func Word(w string) string {
	if w != "" && strings.IndexFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
