package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/settings"
)

// Where the window's settings come from (flags, environment, saved
// preferences) and that they outlive a restart.

// TestSettingsPrecedence: flags given on the command line (and their
// environment variables) win over the saved settings, which win over the
// defaults.
func TestSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	saved := settings.Defaults()
	saved.Agent = settings.AgentDemo
	saved.Model = "saved-model"
	saved.InputTimeout = 2 * time.Minute
	saved.ProviderKey = "saved-key"
	saved.WorkDir = dir
	remote := saved
	remote.Remote, remote.RemoteURL, remote.RemoteToken = true, "ws://saved.example.com/ws", "saved-token"

	for _, c := range []struct {
		name   string
		env    map[string]string
		args   []string
		saved  *settings.Settings
		check  func(t *testing.T, got clientFlags)
		locked map[settings.Field]string
	}{
		{
			name: "defaults", args: []string{"--data-dir", memoryDataDir},
			check: func(t *testing.T, got clientFlags) {
				if got.relay.Agent != "auto" || got.relay.Model != "" || got.relay.InputTimeout != 5*time.Minute || got.relay.Remote {
					t.Errorf("%+v", got)
				}
			},
			locked: map[settings.Field]string{},
		},
		{
			name: "preferences over defaults", args: []string{"--data-dir", memoryDataDir}, saved: &saved,
			check: func(t *testing.T, got clientFlags) {
				r := got.relay
				if r.Agent != "script" || r.Model != "saved-model" || r.InputTimeout != 2*time.Minute || r.ProviderKey != "saved-key" || r.WorkDir != dir {
					t.Errorf("%+v", r)
				}
			},
			locked: map[settings.Field]string{},
		},
		{
			name: "flags over preferences", saved: &saved,
			args: []string{"--data-dir", memoryDataDir, "--model", "flag-model", "--input-timeout", "0", "--agent", "auto"},
			check: func(t *testing.T, got clientFlags) {
				r := got.relay
				if r.Agent != "auto" || r.Model != "flag-model" || r.InputTimeout != 0 || r.ProviderKey != "saved-key" {
					t.Errorf("%+v", r)
				}
			},
			locked: map[settings.Field]string{settings.FieldModel: "--model", settings.FieldInputTimeout: "--input-timeout", settings.FieldAgent: "--agent"},
		},
		{
			name: "environment over preferences", saved: &saved, env: map[string]string{"PILOTDESK_PROVIDER_KEY": "env-key"},
			args: []string{"--data-dir", memoryDataDir},
			check: func(t *testing.T, got clientFlags) {
				if got.relay.ProviderKey != "env-key" || got.relay.Model != "saved-model" {
					t.Errorf("%+v", got.relay)
				}
			},
			locked: map[settings.Field]string{settings.FieldProviderKey: "PILOTDESK_PROVIDER_KEY"},
		},
		{
			name: "flag over its environment variable", env: map[string]string{"PILOTDESK_PROVIDER_KEY": "env-key"},
			args: []string{"--data-dir", memoryDataDir, "--provider-key", "flag-key"},
			check: func(t *testing.T, got clientFlags) {
				if got.relay.ProviderKey != "flag-key" {
					t.Errorf("%+v", got.relay)
				}
			},
			locked: map[settings.Field]string{settings.FieldProviderKey: "--provider-key"},
		},
		{
			name: "saved remote relay", saved: &remote, args: []string{"--data-dir", memoryDataDir},
			check: func(t *testing.T, got clientFlags) {
				if !got.relay.Remote || got.relay.RemoteURL != "ws://saved.example.com/ws" || got.relay.RemoteToken != "saved-token" {
					t.Errorf("remote %v %q token %q", got.relay.Remote, got.relay.RemoteURL, got.relay.RemoteToken)
				}
			},
			locked: map[settings.Field]string{},
		},
		{
			name: "--connect over the saved relay", saved: &remote,
			args: []string{"--data-dir", memoryDataDir, "--connect", "wss://flag.example.com/ws"},
			check: func(t *testing.T, got clientFlags) {
				if !got.relay.Remote || got.relay.RemoteURL != "wss://flag.example.com/ws" || got.relay.RemoteToken != "" {
					t.Errorf("remote %v %q token %q: the saved token must not go to another relay", got.relay.Remote, got.relay.RemoteURL, got.relay.RemoteToken)
				}
			},
			locked: map[settings.Field]string{settings.FieldRemote: "--connect", settings.FieldRemoteURL: "--connect", settings.FieldRemoteToken: "--connect"},
		},
		{
			name: "--script fixes the agent", saved: &saved,
			args: []string{"--data-dir", memoryDataDir, "--script", filepath.Join("..", "ui", "testdata", "script.json")},
			check: func(t *testing.T, got clientFlags) {
				if got.relay.Agent != "auto" || got.relay.Script == "" {
					t.Errorf("%+v", got.relay)
				}
				if s := effectiveSettings(got); s.Agent != settings.AgentDemo {
					t.Errorf("effective agent %q", s.Agent)
				}
			},
			locked: map[settings.Field]string{settings.FieldAgent: "--script"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			cf, fs, getenv := parseWindowFlags(t, c.env, c.args...)
			locked := settings.Locked(fs, getenv)
			if len(locked) != len(c.locked) {
				t.Errorf("locked %v, want %v", locked, c.locked)
			}
			for f, by := range c.locked {
				if locked[f] != by {
					t.Errorf("locked[%s] = %q, want %q", f, locked[f], by)
				}
			}
			p := settings.Defaults()
			if c.saved != nil {
				p = *c.saved
			}
			got, err := withPrefs(cf, locked, p)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, got)
		})
	}

	// A saved folder that has gone is an error, not a silent default.
	gone := saved
	gone.WorkDir = filepath.Join(dir, "gone")
	cf, fs, getenv := parseWindowFlags(t, nil, "--data-dir", memoryDataDir)
	if _, err := withPrefs(cf, settings.Locked(fs, getenv), gone); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("err %v", err)
	}
}

// TestSettingsPersistAcrossRestart: settings saved in one run of the app
// are read back by the next one.
func TestSettingsPersistAcrossRestart(t *testing.T) {
	id := testAppID()
	a := newPrefsApp(t, id)
	s := settings.Settings{Agent: settings.AgentCopilot, CopilotPath: "/opt/copilot/copilot", Model: "gpt-5", ProviderURL: "http://127.0.0.1:8080/v1",
		ProviderType: "anthropic", ProviderKey: "k-123", WorkDir: t.TempDir(), InputTimeout: 90 * time.Second, Notifications: false,
		Remote: true, RemoteURL: "wss://relay.example.com/ws", RemoteToken: "t-456", BudgetCredits: 25.5, BudgetPeriod: 48 * time.Hour}
	settings.Save(a.Preferences(), s)
	stopApp(a)

	if _, err := os.Stat(filepath.Join(os.TempDir(), "fyne-test", id, "preferences.json")); err != nil {
		t.Fatalf("no preferences file: %v", err)
	}
	again := newPrefsApp(t, id)
	if got := settings.Load(again.Preferences(), settings.Defaults()); got != s {
		t.Fatalf("after a restart: %+v\nwant %+v", got, s)
	}
	other := newPrefsApp(t, testAppID())
	if got := settings.Load(other.Preferences(), settings.Defaults()); got != settings.Defaults() {
		t.Fatalf("another app id sees %+v", got)
	}
}
