package chat

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// OpenTerminal looks at the process's stdin and stdout and returns what
// the REPL may do with them, the reader to pass as Config.In, and a restore
// function that must run before the process exits.
//
//   - stdout a terminal (and TERM not "dumb"): Live, so the REPL may redraw
//     the bottom of the screen; colours and the spinner too, unless NO_COLOR
//     is set.
//   - stdin a terminal as well: stdin goes into raw mode, so the REPL reads
//     keys (arrows, Ctrl+C, Ctrl+D) itself.
//   - anything else (a pipe, a file): plain lines.
func OpenTerminal(stdin, stdout *os.File, getenv func(string) string) (Terminal, io.Reader, func(), error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	outFd := int(stdout.Fd())
	var t Terminal
	// A Windows console that cannot process escape sequences gets plain
	// lines, as a pipe does.
	t.Live = term.IsTerminal(outFd) && getenv("TERM") != "dumb" && enableVT(outFd)
	t.Color = t.Live && getenv("NO_COLOR") == ""
	t.Spinner = t.Color
	t.Width = func() int {
		w, _, err := term.GetSize(outFd)
		if err != nil {
			return 0
		}
		return w
	}
	inFd := int(stdin.Fd())
	if !t.Live || !term.IsTerminal(inFd) {
		return t, stdin, func() {}, nil
	}
	state, err := term.MakeRaw(inFd)
	if err != nil {
		return Terminal{}, nil, nil, fmt.Errorf("putting the terminal in raw mode: %w", err)
	}
	t.Raw = true
	in, closeIn := cancellableReader(stdin)
	restore := func() {
		closeIn()
		_ = term.Restore(inFd, state)
	}
	return t, in, restore, nil
}
