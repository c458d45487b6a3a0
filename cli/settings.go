package cli

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// relaySettings are the relay's settings (the serve flags of docs/cli.md).
// The window's embedded relay takes the same ones.
type relaySettings struct {
	Listen           string
	Token            string
	InsecureNoAuth   bool
	Agent            string
	Script           string
	CopilotPath      string
	Model            string
	ProviderURL      string
	ProviderType     string
	ProviderKey      string
	WorkDir          string
	HeartbeatTimeout time.Duration
	InputTimeout     time.Duration
	DataDir          string
	HistoryMaxAge    time.Duration
	TLSCert          string
	TLSKey           string
	Verbose          bool
}

// memoryDataDir as --data-dir keeps history in memory only.
const memoryDataDir = ":memory:"

func (s *relaySettings) register(fs *flag.FlagSet, getenv func(string) string, withListen bool) {
	if withListen {
		fs.StringVar(&s.Listen, "listen", "127.0.0.1:7420", "where the relay listens (`ADDR`); host:0 picks a free port")
		fs.StringVar(&s.Token, "token", getenv("PILOTDESK_TOKEN"), "clients must present this `TOKEN` (default: env PILOTDESK_TOKEN)")
		fs.BoolVar(&s.InsecureNoAuth, "insecure-no-auth", false, "allow a non-loopback --listen with no token")
		fs.StringVar(&s.TLSCert, "tls-cert", "", "serve wss:// with this certificate `FILE`")
		fs.StringVar(&s.TLSKey, "tls-key", "", "the certificate's private key `FILE`")
	}
	fs.StringVar(&s.Agent, "agent", "auto", "agent backend: copilot, script or auto")
	fs.StringVar(&s.Script, "script", "", "scenario `FILE` for the scripted agent (default: the built-in demo)")
	fs.StringVar(&s.CopilotPath, "copilot-path", "", "the Copilot CLI executable (default: copilot on PATH)")
	fs.StringVar(&s.Model, "model", "", "model for new conversations (default: the CLI's)")
	fs.StringVar(&s.ProviderURL, "provider-url", getenv("PILOTDESK_PROVIDER_URL"), "bring-your-own-model: an OpenAI-compatible `URL` (…/v1) (default: env PILOTDESK_PROVIDER_URL)")
	fs.StringVar(&s.ProviderType, "provider-type", "openai", "provider type: openai, azure or anthropic")
	fs.StringVar(&s.ProviderKey, "provider-key", getenv("PILOTDESK_PROVIDER_KEY"), "API `KEY` for the provider (default: env PILOTDESK_PROVIDER_KEY)")
	fs.StringVar(&s.WorkDir, "workdir", "", "the `DIR`ectory the agent works in (default: the current directory)")
	fs.DurationVar(&s.HeartbeatTimeout, "heartbeat-timeout", 180*time.Second, "close a connection after this long with no inbound message")
	fs.DurationVar(&s.InputTimeout, "input-timeout", 5*time.Minute, "how long an input request waits for an answer; 0 waits forever")
	fs.StringVar(&s.DataDir, "data-dir", "", "where conversation history is kept (default: the OS's user data dir; "+memoryDataDir+" keeps it in memory)")
	fs.DurationVar(&s.HistoryMaxAge, "history-max-age", 0, "drop conversations untouched for longer than this (default: keep everything)")
	fs.BoolVar(&s.Verbose, "verbose", false, "log debug messages")
}

// validate checks the settings that flag parsing cannot, and fills defaults.
func (s *relaySettings) validate() error {
	switch s.Agent {
	case "auto", "copilot", "script":
	default:
		return usageError("--agent must be auto, copilot or script, not %q", s.Agent)
	}
	switch s.ProviderType {
	case "openai", "azure", "anthropic":
	default:
		return usageError("--provider-type must be openai, azure or anthropic, not %q", s.ProviderType)
	}
	if s.ProviderURL != "" {
		u, err := url.Parse(s.ProviderURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageError("--provider-url must be an http(s) URL such as http://127.0.0.1:8080/v1, not %q", s.ProviderURL)
		}
	}
	if s.Script != "" && s.Agent == "copilot" {
		return usageError("--script is for the scripted agent; it cannot be used with --agent copilot")
	}
	if s.HeartbeatTimeout <= 0 {
		return usageError("--heartbeat-timeout must be positive, not %v", s.HeartbeatTimeout)
	}
	if s.InputTimeout < 0 {
		return usageError("--input-timeout must be 0 (wait forever) or positive, not %v", s.InputTimeout)
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
	if s.WorkDir != "" {
		if fi, err := os.Stat(s.WorkDir); err != nil || !fi.IsDir() {
			return usageError("--workdir %q is not a directory", s.WorkDir)
		}
	}
	if s.DataDir == "" {
		dir, err := userDataDir()
		if err != nil {
			return fmt.Errorf("finding the user data dir (set --data-dir): %w", err)
		}
		s.DataDir = dir
	}
	return nil
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
			fmt.Fprintf(out, "Usage of pilotdesk %s:\n", fs.Name())
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
