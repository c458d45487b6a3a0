package cli

import (
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/session/acp"
	"github.com/pilotdesk/pilotdesk/settings"
)

// The bounds on open ACP sessions are settings: --acp-idle-close and
// --acp-max-sessions (and the window's saved preferences) reach the ACP
// backend's options, 0 turns each off, and the defaults are the backend's.
func TestACPSessionSettingsReachTheBackend(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	serve := func(args ...string) relaySettings {
		t.Helper()
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		var s relaySettings
		s.register(fs, func(string) string { return "" }, true)
		args = append([]string{"--data-dir", memoryDataDir, "--agent", "acp", "--acp-command", "some-agent --acp"}, args...)
		if err := parseFlags(fs, args, io.Discard); err != nil {
			t.Fatal(err)
		}
		if err := s.validate(fromCommandLine); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		name      string
		args      []string
		idleClose time.Duration
		maxOpen   int
	}{
		{"defaults", nil, acp.DefaultIdleClose, acp.DefaultMaxOpen},
		{"set", []string{"--acp-idle-close", "3m", "--acp-max-sessions", "2"}, 3 * time.Minute, 2},
		{"off", []string{"--acp-idle-close", "0", "--acp-max-sessions", "0"}, -1, -1},
	} {
		o := acpOptions(serve(c.args...), logger)
		if o.IdleClose != c.idleClose || o.MaxOpen != c.maxOpen {
			t.Errorf("%s: IdleClose %v, MaxOpen %d; want %v, %d", c.name, o.IdleClose, o.MaxOpen, c.idleClose, c.maxOpen)
		}
	}

	// The window: what the Settings dialog saved, where the command line
	// left the settings open.
	saved := settings.Defaults()
	saved.Agent, saved.ACPCommand = settings.AgentACP, "some-agent --acp"
	saved.ACPIdleClose, saved.ACPMaxSessions = 90*time.Second, 3
	cf := clientFlags{}
	cf.relay.Settings = settings.Defaults()
	cf.relay.DataDir, cf.relay.HeartbeatTimeout = memoryDataDir, time.Minute
	cf, err := withPrefs(cf, nil, saved)
	if err != nil {
		t.Fatal(err)
	}
	if o := acpOptions(cf.relay, logger); o.IdleClose != 90*time.Second || o.MaxOpen != 3 {
		t.Errorf("from the preferences: IdleClose %v, MaxOpen %d; want 1m30s, 3", o.IdleClose, o.MaxOpen)
	}

	// A negative value is refused, naming the flag.
	for flagName, want := range map[string]string{
		"--acp-idle-close":   "--acp-idle-close must be 0 (never) or positive",
		"--acp-max-sessions": "--acp-max-sessions must be 0 (no bound) or positive",
	} {
		value := "-1"
		if flagName == "--acp-idle-close" {
			value = "-1m"
		}
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		var s relaySettings
		s.register(fs, func(string) string { return "" }, true)
		if err := parseFlags(fs, []string{"--data-dir", memoryDataDir, "--agent", "acp", "--acp-command", "a", flagName, value}, io.Discard); err != nil {
			t.Fatal(err)
		}
		if err := s.validate(fromCommandLine); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s %s: %v, want %q", flagName, value, err, want)
		}
	}
}
