// Package fontindex has the index of the system's fonts read on a
// goroutine of its own while the program's packages initialise, when the
// command line is the window's.
//
// Fyne falls back on the system's fonts through go-text's fontscan, and
// its first text measurement reads their index (fontconfig's configuration
// files and the cache of every system font's coverage, about 11 ms on a
// 2-core machine) on the main goroutine, before the window can be mapped.
// Meanwhile the program's start spends as long on one core initialising
// packages (chroma's lexers alone, 6-9 ms). The index is a process-wide
// value that fontscan builds once (a sync.Once), safe for concurrent use,
// so reading it here, beside the packages' initialisation, takes it off
// the window's path: Fyne's read later finds it done, or waits for it.
//
// Ordering: the Go spec initialises packages one at a time, each once its
// imports are done, the first in import-path order among those that are
// ready. This package imports only fontscan and the standard library, and
// its path sorts before regexp/syntax, which chroma's packages need
// (through regexp), so its init runs before theirs
// (TestInitialisedBeforeChroma reads the order from GODEBUG=inittrace=1).
//
// The other commands (serve, chat, token, help) draw no text: for them
// nothing is read, and no cache is written in the user's home.
package fontindex

import (
	"os"
	"strings"

	"github.com/go-text/typesetting/fontscan"
)

func init() {
	if isWindow(os.Args[1:]) {
		go read()
	}
}

// isWindow says whether a command line opens the window: the window takes
// only flags, and every other command is a word first (see cli.Run).
func isWindow(args []string) bool {
	return len(args) == 0 || strings.HasPrefix(args[0], "-")
}

// read builds fontscan's index of the system fonts in the cache directory
// Fyne uses on the desktop (fontscan's default), so that Fyne's own read
// finds it built. An error here is Fyne's to see: its read tries again.
func read() {
	_ = fontscan.NewFontMap(quiet{}).UseSystemFonts("")
}

// quiet drops fontscan's log: its notes (fontconfig includes that do not
// exist) are no news to the user, and Fyne silences them too.
type quiet struct{}

func (quiet) Printf(string, ...any) {}
