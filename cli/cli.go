// Package cli is pilotdesk's command line: it parses flags and wires the
// relay, the agent backends, the history store and the clients together
// (docs/cli.md). main.go only calls Main.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Version is the app's version; the build may override it with
// -ldflags "-X github.com/pilotdesk/pilotdesk/cli.Version=…".
var Version = "0.1.0"

// errUsage marks an error the user made on the command line: exit status 2.
var errUsage = errors.New("usage")

// Env is what a command gets from its process, so that tests can run
// commands in-process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

// Main runs the command line args (without the program name) and returns the
// process exit status.
func Main(args []string) int {
	env := Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, args, env)
}

// Run is Main with its process context and environment given.
func Run(ctx context.Context, args []string, env Env) int {
	var err error
	switch {
	case len(args) > 0 && args[0] == "serve":
		err = runServe(ctx, args[1:], env)
	case len(args) > 0 && args[0] == "chat":
		err = runChat(ctx, args[1:], env)
	case len(args) > 0 && args[0] == "token":
		err = runToken(ctx, args[1:], env)
	case len(args) > 0 && args[0] == "move-streams":
		err = runMoveStreams(ctx, args[1:], env)
	case len(args) > 0 && args[0] == "help":
		printUsage(env.Stdout)
		return 0
	default:
		err = runWindow(ctx, args, env)
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(env.Stderr, "pilotdesk: %v\nRun 'pilotdesk help' for the commands and flags.\n", unwrapUsage(err))
		return 2
	default:
		fmt.Fprintf(env.Stderr, "pilotdesk: %v\n", err)
		return 1
	}
}

// usageError wraps a command-line mistake.
func usageError(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

func unwrapUsage(err error) string {
	msg := err.Error()
	const prefix = "usage: "
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return msg[len(prefix):]
	}
	return msg
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `pilotdesk: a desktop window for AI coding agents (the GitHub Copilot CLI first)

Commands:
  pilotdesk [flags]                          open the window on an embedded relay
  pilotdesk --connect URL --token T          open the window on a remote relay (ws:// or wss://)
  pilotdesk serve [flags]                    run the relay alone, no window
  pilotdesk chat [--connect URL --token T] [--conversation ID]
                                             a terminal client (REPL); attaches to
                                             the relay already running on the data dir
  pilotdesk token create|list|revoke         device tokens (pilotdesk token help)
  pilotdesk move-streams --nats URLS --nats-streams N
                                             spread a NATS history made with one
                                             event stream over N (relays stopped)
  pilotdesk --version                        print the version

Run 'pilotdesk serve -h' for the relay's flags.
`)
}

// newLogger returns the slog logger commands log with: text to stderr.
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
