// Package fynelocale keeps Fyne from logging "Error parsing user locale C"
// at every start on systems whose locale is C.UTF-8 (Debian's default in
// many setups), for the window and the terminal commands alike.
//
// Fyne's lang package reads the locale in its package init, through
// jeandeaual/go-locale, which understands "C" and "POSIX" as "no locale" but
// passes "C.UTF-8" on as the language tag "C", which does not parse. This
// package's init narrows such a value to plain "C" for the duration of the
// program's package initialisation; main calls Restore first thing, so the
// process (and every child it starts, such as the Copilot CLI) sees the
// user's environment unchanged.
//
// Ordering: the Go spec initialises packages in import-path order, each once
// its imports are done. This package imports only the standard library and
// its path sorts before golang.org/x/text/language, which Fyne's lang
// imports, so its init always runs before Fyne reads the locale.
package fynelocale

import (
	"os"
	"strings"
)

// saved is the variable this package changed and its value; written once in
// init, read by Restore on the main goroutine.
var saved struct {
	name, value string
}

func init() { narrow() }

// narrow replaces a C.* or POSIX.* locale with plain C or POSIX.
func narrow() {
	// go-locale reads the first non-empty of these.
	for _, name := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		if lang, _, found := strings.Cut(v, "."); found && (lang == "C" || lang == "POSIX") {
			saved.name, saved.value = name, v
			os.Setenv(name, lang)
		}
		return
	}
}

// Restore puts back the value init changed, if any.
func Restore() {
	if saved.name != "" {
		os.Setenv(saved.name, saved.value)
		saved.name = ""
	}
}
