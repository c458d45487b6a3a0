//go:build nogui

package cli

import (
	"context"
	"errors"
	"flag"
)

// showWindow in a build without the window (-tags nogui: the relay and the
// terminal client alone, which need no cgo, e.g. for macOS built on Linux)
// says what this build can do instead.
func showWindow(ctx context.Context, fs *flag.FlagSet, cf *clientFlags, env Env) error {
	return errors.New("this build of pilotdesk has no window (built with -tags nogui): use `pilotdesk serve` for the relay or `pilotdesk chat` for the terminal client")
}
