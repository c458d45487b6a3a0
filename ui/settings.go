package ui

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	"fyne.io/fyne/v2"
)

// Settings are what the Settings dialog edits and the app keeps in its Fyne
// preferences. The embedded relay's settings mirror the command-line flags
// of the same names (docs/cli.md); flags given on the command line win over them.
type Settings struct {
	// Agent is the embedded relay's backend: "auto", "copilot" or
	// "script" (the built-in demo).
	Agent        string
	CopilotPath  string // the Copilot CLI executable; "" = copilot on PATH
	Model        string // sent with every prompt; "" = the agent's default
	ProviderURL  string // bring-your-own-model endpoint (…/v1)
	ProviderType string // "openai", "azure" or "anthropic"
	ProviderKey  string // secret: never logged, shown masked
	WorkDir      string // where the agent works; "" = the current directory
	// InputTimeout is how long a question waits for an answer; 0 waits
	// forever ("never").
	InputTimeout  time.Duration
	Notifications bool
	// Remote: connect to the relay at RemoteURL instead of embedding one.
	Remote      bool
	RemoteURL   string
	RemoteToken string // secret: never logged, shown masked
}

// Agents the Settings dialog offers.
const (
	AgentAuto    = "auto"
	AgentCopilot = "copilot"
	AgentDemo    = "script"
)

// DefaultSettings are the settings of a fresh install: the flags' defaults.
func DefaultSettings() Settings {
	return Settings{
		Agent:         AgentAuto,
		ProviderType:  "openai",
		InputTimeout:  5 * time.Minute,
		Notifications: true,
	}
}

// SettingField names one setting. The command line can fix a field for a
// run; Options.Locked says which.
type SettingField string

const (
	FieldAgent         SettingField = "agent"
	FieldCopilotPath   SettingField = "copilotPath"
	FieldModel         SettingField = "model"
	FieldProviderURL   SettingField = "providerURL"
	FieldProviderType  SettingField = "providerType"
	FieldProviderKey   SettingField = "providerKey"
	FieldWorkDir       SettingField = "workDir"
	FieldInputTimeout  SettingField = "inputTimeout"
	FieldNotifications SettingField = "notifications"
	FieldRemote        SettingField = "remote"
	FieldRemoteURL     SettingField = "remoteURL"
	FieldRemoteToken   SettingField = "remoteToken"
)

// prefKey is the preference key of a field. Keys are stable: changing one
// loses what users saved.
func prefKey(f SettingField) string { return "settings." + string(f) }

// prefFirstRunDismissed remembers that the user dismissed the notice about
// running the demo because no Copilot CLI was found.
const prefFirstRunDismissed = "notice.firstRunDismissed"

// neverText is how the dialog and the preferences spell "no input timeout".
const neverText = "never"

// LoadSettings reads the settings from p; what p does not hold comes from
// def.
func LoadSettings(p fyne.Preferences, def Settings) Settings {
	str := func(f SettingField, d string) string { return p.StringWithFallback(prefKey(f), d) }
	s := Settings{
		Agent:         str(FieldAgent, def.Agent),
		CopilotPath:   str(FieldCopilotPath, def.CopilotPath),
		Model:         str(FieldModel, def.Model),
		ProviderURL:   str(FieldProviderURL, def.ProviderURL),
		ProviderType:  str(FieldProviderType, def.ProviderType),
		ProviderKey:   str(FieldProviderKey, def.ProviderKey),
		WorkDir:       str(FieldWorkDir, def.WorkDir),
		InputTimeout:  def.InputTimeout,
		Notifications: p.BoolWithFallback(prefKey(FieldNotifications), def.Notifications),
		Remote:        p.BoolWithFallback(prefKey(FieldRemote), def.Remote),
		RemoteURL:     str(FieldRemoteURL, def.RemoteURL),
		RemoteToken:   str(FieldRemoteToken, def.RemoteToken),
	}
	if raw := p.String(prefKey(FieldInputTimeout)); raw != "" {
		// A value the user could not have saved (an edited file) falls
		// back to the default rather than failing the start.
		if d, err := ParseInputTimeout(raw); err == nil {
			s.InputTimeout = d
		}
	}
	return s
}

// allFields lists every field, in the dialog's order.
var allFields = []SettingField{
	FieldRemote, FieldRemoteURL, FieldRemoteToken, FieldAgent, FieldCopilotPath, FieldModel,
	FieldProviderURL, FieldProviderType, FieldProviderKey, FieldWorkDir, FieldInputTimeout, FieldNotifications,
}

// SaveSettings writes every field of s to p, in one change where the
// preferences allow it: Fyne's file-backed preferences write the whole file
// on each change, so twelve separate changes would mean twelve writes that
// its file watcher can read half-written.
func SaveSettings(p fyne.Preferences, s Settings) {
	values := map[string]any{
		prefKey(FieldAgent):         s.Agent,
		prefKey(FieldCopilotPath):   s.CopilotPath,
		prefKey(FieldModel):         s.Model,
		prefKey(FieldProviderURL):   s.ProviderURL,
		prefKey(FieldProviderType):  s.ProviderType,
		prefKey(FieldProviderKey):   s.ProviderKey,
		prefKey(FieldWorkDir):       s.WorkDir,
		prefKey(FieldInputTimeout):  FormatInputTimeout(s.InputTimeout),
		prefKey(FieldNotifications): s.Notifications,
		prefKey(FieldRemote):        s.Remote,
		prefKey(FieldRemoteURL):     s.RemoteURL,
		prefKey(FieldRemoteToken):   s.RemoteToken,
	}
	// The app's and the test driver's preferences (internal.
	// InMemoryPreferences) offer a batch write; other implementations get
	// one call per key.
	if batch, ok := p.(interface{ WriteValues(func(map[string]any)) }); ok {
		batch.WriteValues(func(m map[string]any) {
			for k, v := range values {
				m[k] = v
			}
		})
		return
	}
	for k, v := range values {
		switch v := v.(type) {
		case string:
			p.SetString(k, v)
		case bool:
			p.SetBool(k, v)
		}
	}
}

// ParseInputTimeout reads an input timeout as the dialog accepts it: a Go
// duration ("90s", "5m", "1h30m"), or "never" (also "0"), which waits
// forever.
func ParseInputTimeout(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, neverText) || s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: write it like 90s, 5m or 1h, or never", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be longer than zero, or never", s)
	}
	return d, nil
}

// FormatInputTimeout is the inverse of ParseInputTimeout ("5m", "1h30m",
// "never").
func FormatInputTimeout(d time.Duration) string {
	if d <= 0 {
		return neverText
	}
	s := d.String()
	// 5m0s reads better as 5m.
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// FieldError is a problem with one field, worded for the person who typed it.
type FieldError struct {
	Field   SettingField
	Message string
}

func (e FieldError) Error() string { return e.Message }

// Validate checks s and returns one error per bad field, in the dialog's
// order. The input timeout is checked where it is typed (ParseInputTimeout).
func (s Settings) Validate() []FieldError {
	var errs []FieldError
	add := func(f SettingField, format string, a ...any) {
		errs = append(errs, FieldError{Field: f, Message: fmt.Sprintf(format, a...)})
	}
	if s.Remote {
		u, err := url.Parse(strings.TrimSpace(s.RemoteURL))
		switch {
		case strings.TrimSpace(s.RemoteURL) == "":
			add(FieldRemoteURL, "Enter the relay's address, such as ws://host:7420/ws")
		case err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "":
			add(FieldRemoteURL, "%q is not a relay address: use ws://host:7420/ws or wss://host/ws", s.RemoteURL)
		}
	}
	switch s.Agent {
	case AgentAuto, AgentCopilot, AgentDemo:
	default:
		add(FieldAgent, "Unknown agent %q: pick auto, Copilot or the demo", s.Agent)
	}
	if p := strings.TrimSpace(s.CopilotPath); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			add(FieldCopilotPath, "No Copilot CLI at %q: pick the copilot executable, or leave it empty to use copilot on PATH", p)
		}
	}
	if s.ProviderURL != "" {
		u, err := url.Parse(strings.TrimSpace(s.ProviderURL))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add(FieldProviderURL, "%q is not a provider URL: use http(s)://host:port/v1", s.ProviderURL)
		}
	}
	switch s.ProviderType {
	case "openai", "azure", "anthropic":
	default:
		add(FieldProviderType, "Unknown provider type %q: pick openai, azure or anthropic", s.ProviderType)
	}
	if d := strings.TrimSpace(s.WorkDir); d != "" {
		fi, err := os.Stat(d)
		switch {
		case errors.Is(err, os.ErrNotExist):
			add(FieldWorkDir, "The folder %q does not exist", d)
		case err != nil:
			add(FieldWorkDir, "Cannot use the folder %q: %v", d, err)
		case !fi.IsDir():
			add(FieldWorkDir, "%q is a file, not a folder", d)
		}
	}
	if s.InputTimeout < 0 {
		add(FieldInputTimeout, "The input timeout must be longer than zero, or never")
	}
	return errs
}

// needsRestart reports whether going from old to s needs the relay
// restarted (embedded) or reconnected (remote). The model and the
// notifications apply at once; the agent's settings matter only to an
// embedded relay.
func needsRestart(old, s Settings) bool {
	if old.Remote != s.Remote {
		return true
	}
	if s.Remote {
		return old.RemoteURL != s.RemoteURL || old.RemoteToken != s.RemoteToken
	}
	a, b := old, s
	a.Model, b.Model = "", ""
	a.Notifications, b.Notifications = false, false
	a.RemoteURL, b.RemoteURL, a.RemoteToken, b.RemoteToken = "", "", "", ""
	return a != b
}

// masked stands in for a secret in logs and text.
func masked(secret string) string {
	if secret == "" {
		return ""
	}
	return "********"
}

// LogValue keeps the secrets out of logs: slog calls it for a Settings value.
func (s Settings) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("agent", s.Agent),
		slog.String("copilotPath", s.CopilotPath),
		slog.String("model", s.Model),
		slog.String("providerURL", s.ProviderURL),
		slog.String("providerType", s.ProviderType),
		slog.String("providerKey", masked(s.ProviderKey)),
		slog.String("workDir", s.WorkDir),
		slog.String("inputTimeout", FormatInputTimeout(s.InputTimeout)),
		slog.Bool("notifications", s.Notifications),
		slog.Bool("remote", s.Remote),
		slog.String("remoteURL", s.RemoteURL),
		slog.String("remoteToken", masked(s.RemoteToken)),
	)
}

// String keeps the secrets out of fmt's %v and %+v.
func (s Settings) String() string {
	s.ProviderKey, s.RemoteToken = masked(s.ProviderKey), masked(s.RemoteToken)
	type plain Settings // no String method: no recursion
	return fmt.Sprintf("%+v", plain(s))
}

// GoString keeps the secrets out of fmt's %#v.
func (s Settings) GoString() string { return "ui.Settings" + s.String() }
