package acp

import (
	"errors"
	"fmt"
	"strings"
)

// SplitCommand splits an agent's command line (--acp-command) into argv the
// way a POSIX shell splits words, without running a shell: blanks separate
// words; 'single quotes' keep everything literally; "double quotes" keep
// everything but a backslash before $ ` " \ or a newline; outside quotes a
// backslash keeps the next character (a backslash-newline joins lines).
//
// Nothing is expanded: $HOME, ~ and * stay as written. Because no shell runs,
// an unquoted shell operator (| & ; < > ( ) or a backquote) is an error
// rather than a surprise argument: a pipeline or redirection needs a wrapper
// script.
func SplitCommand(line string) ([]string, error) {
	var (
		args    []string
		word    strings.Builder
		inWord  bool // a word has started (even an empty "" one)
		quote   rune // the open quote, or 0
		escaped bool // the previous character was an unquoted or "…" backslash
	)
	for i, r := range line {
		switch {
		case escaped:
			escaped = false
			if quote == '"' && !strings.ContainsRune("$`\"\\\n", r) {
				word.WriteRune('\\') // inside "…" only those are escapes
			}
			if r != '\n' { // backslash-newline: a line continuation
				word.WriteRune(r)
			}
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				word.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				args = append(args, word.String())
				word.Reset()
				inWord = false
			}
		case strings.ContainsRune("|&;<>()`", r):
			return nil, fmt.Errorf("the command line has a shell operator %q at position %d; no shell runs it: quote it, or put the pipeline in a script", r, i+1)
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	switch {
	case quote != 0:
		return nil, fmt.Errorf("the command line has an unterminated %c quote", quote)
	case escaped:
		return nil, errors.New("the command line ends with a backslash")
	}
	if inWord {
		args = append(args, word.String())
	}
	if len(args) == 0 {
		return nil, errors.New("the command line is empty")
	}
	return args, nil
}
