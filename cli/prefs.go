package cli

import (
	"github.com/pilotdesk/pilotdesk/settings"
)

// The window's settings come from four places, strongest first: a flag
// given on the command line, the PILOTDESK_* environment variable that
// stands in for it, the Settings dialog's saved preferences, and the
// defaults (package settings).

// withPrefs returns the flags with the saved settings in every place the
// command line left open (locked names what it fixed), validated.
func withPrefs(cf clientFlags, locked map[settings.Field]string, saved settings.Settings) (clientFlags, error) {
	out := cf
	out.relay.Settings = settings.Merge(cf.relay.Settings, saved, locked)
	fromPrefs := func(f settings.Field) bool { _, ok := locked[f]; return !ok }
	if err := out.validate(fromPrefs); err != nil {
		return cf, err
	}
	return out, nil
}

// effectiveSettings describes flags in the Settings dialog's terms: the
// settings in use, with --script shown as the demo agent it runs.
func effectiveSettings(cf clientFlags) settings.Settings {
	s := cf.relay.Settings
	if s.Agent == settings.AgentAuto && cf.relay.Script != "" {
		s.Agent = settings.AgentDemo
	}
	return s
}
