package cli

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/session/acp"
	"github.com/pilotdesk/pilotdesk/settings"
)

// relaySettings are the relay's settings (the serve flags of docs/cli.md).
// The window's embedded relay takes the same ones. The settings the
// window's Settings dialog edits are the table of package settings; the
// rest are the relay's own.
type relaySettings struct {
	settings.Settings

	Listen           string
	Token            string
	InsecureNoAuth   bool
	Script           string
	HeartbeatTimeout time.Duration
	DataDir          string
	HistoryMaxAge    time.Duration
	TLSCert          string
	TLSKey           string
	Verbose          bool
	NATS             natsSettings // serve --nats (nats.go)
	// WorkspaceRoots are the folders conversations may work in (serve
	// --workspace-root, repeatable); none: the default folder alone, or,
	// for the window's and the terminal's embedded relay, the user's home.
	WorkspaceRoots rootList

	// lanCert, when set, is the certificate of an embedded relay reachable
	// from the network (Settings' LAN), issued by the data dir's local CA:
	// it serves wss:// with it, and the setup page in plain HTTP on the
	// same port (lansetup.go).
	lanCert *lanTLS
	// commitInterval is the relay's Config.CommitInterval: set for the
	// embedded relay of the window and the terminal (startTarget), 0 for
	// serve's.
	commitInterval time.Duration
}

// memoryDataDir as --data-dir keeps history in memory only.
const memoryDataDir = ":memory:"

func (s *relaySettings) register(fs *flag.FlagSet, getenv func(string) string, withListen bool) {
	if withListen {
		// The token clients must present: the one they name with
		// --token, so the same environment variable gives it.
		env := settings.Lookup(settings.FieldRemoteToken).Env
		fs.StringVar(&s.Listen, "listen", "127.0.0.1:7420", "where the relay listens (`ADDR`); host:0 picks a free port")
		fs.StringVar(&s.Token, "token", getenv(env), "clients must present this `TOKEN` (default: env "+env+")")
		fs.BoolVar(&s.InsecureNoAuth, "insecure-no-auth", false, "run with no token at all: anyone who can connect is the owner (loud warning; refused while the data dir holds device tokens)")
		fs.StringVar(&s.TLSCert, "tls-cert", "", "serve wss:// with this certificate `FILE`")
		fs.StringVar(&s.TLSKey, "tls-key", "", "the certificate's private key `FILE`")
		s.NATS.register(fs, getenv)
		fs.Var(&s.WorkspaceRoots, "workspace-root", "a `DIR`ectory inside which conversations may choose their folder; repeatable (default: --workdir alone)")
	}
	settings.RegisterFlags(fs, &s.Settings, getenv, settings.GroupAgent, settings.GroupWindow, settings.GroupBudget)
	fs.StringVar(&s.Script, "script", "", "scenario `FILE` for the scripted agent (default: the built-in demo)")
	fs.DurationVar(&s.HeartbeatTimeout, "heartbeat-timeout", 180*time.Second, "close a connection after this long with no inbound message")
	fs.StringVar(&s.DataDir, "data-dir", "", "where conversation history is kept (default: the OS's user data dir; "+memoryDataDir+" keeps it in memory)")
	fs.DurationVar(&s.HistoryMaxAge, "history-max-age", 0, "drop conversations untouched for longer than this (default: keep everything)")
	fs.BoolVar(&s.Verbose, "verbose", false, "log debug messages")
}

// validate checks the settings that flag parsing cannot, and fills defaults.
// A bad value of the settings table is worded for the command line, or for
// the Settings dialog's user if it came from the saved settings (saved
// reports which).
func (s *relaySettings) validate(saved func(settings.Field) bool) error {
	if err := settingsError(s.Settings, saved); err != nil {
		return err
	}
	if s.Script != "" && (s.Agent == settings.AgentCopilot || s.Agent == settings.AgentACP) {
		return usageError("--script is for the scripted agent; it cannot be used with --agent %s", s.Agent)
	}
	if s.Agent == settings.AgentACP {
		if _, err := acp.SplitCommand(s.ACPCommand); err != nil {
			return usageError("--acp-command: %v", err)
		}
	}
	if s.HeartbeatTimeout <= 0 {
		return usageError("--heartbeat-timeout must be positive, not %v", s.HeartbeatTimeout)
	}
	if s.HistoryMaxAge < 0 {
		return usageError("--history-max-age must be positive, not %v", s.HistoryMaxAge)
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return usageError("--tls-cert and --tls-key go together")
	}
	if s.Listen != "" {
		if _, _, err := net.SplitHostPort(s.Listen); err != nil {
			return usageError("--listen must be HOST:PORT, such as 127.0.0.1:7420: %v", err)
		}
	}
	if s.DataDir == "" {
		dir, err := userDataDir()
		if err != nil {
			return fmt.Errorf("finding the user data dir (set --data-dir): %w", err)
		}
		s.DataDir = dir
	}
	return s.NATS.validate(s.DataDir)
}

// fromCommandLine says that every setting came from the command line.
func fromCommandLine(settings.Field) bool { return false }

// settingsError is the first problem a run on s would refuse, as a usage
// error: in the flag's words, or in the dialog's for a value that came from
// the saved settings (saved reports which).
func settingsError(s settings.Settings, saved func(settings.Field) bool) error {
	errs := s.Validate()
	if len(errs) == 0 {
		return nil
	}
	e := errs[0]
	if saved(e.Field) {
		return usageError("%s", e.Message)
	}
	return usageError("%s", e.Flag)
}

// userDataDir is where the OS keeps an app's data: XDG_DATA_HOME on Linux,
// Application Support on macOS, LocalAppData on Windows.
func userDataDir() (string, error) {
	switch runtime.GOOS {
	case "windows":
		if d := os.Getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "pilotdesk"), nil
		}
	case "darwin":
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, "Library", "Application Support", "pilotdesk"), nil
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "pilotdesk"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "share", "pilotdesk"), nil
}

// parseFlags parses args and refuses positional arguments. The flag
// package's own printing is silenced so that an error is reported once, by
// Run; -h prints the flags to out.
func parseFlags(fs *flag.FlagSet, args []string, out io.Writer) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(out)
			cmd := "pilotdesk"
			if fs.Name() != cmd {
				cmd += " " + fs.Name() // a subcommand: serve, chat
			}
			fmt.Fprintf(out, "Usage: %s [flags]\n\nFlags:\n", cmd)
			fs.PrintDefaults()
			return err
		}
		return usageError("%v", err)
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", strings.Join(fs.Args(), " "))
	}
	return nil
}

// rootList is the repeatable --workspace-root: its values one a line (a
// string, so that the settings stay comparable).
type rootList string

func (l *rootList) String() string { return strings.ReplaceAll(string(*l), "\n", ",") }

func (l *rootList) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("must not be empty")
	}
	if strings.Contains(v, "\n") {
		return fmt.Errorf("must not hold a line break")
	}
	if *l != "" {
		*l += "\n"
	}
	*l += rootList(v)
	return nil
}

// List is the roots given, in order.
func (l rootList) List() []string {
	if l == "" {
		return nil
	}
	return strings.Split(string(l), "\n")
}
