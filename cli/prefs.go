package cli

import (
	"flag"

	"github.com/pilotdesk/pilotdesk/ui"
)

// The window's settings come from three places, strongest first: the
// command line (flags given explicitly, and the PILOTDESK_* environment
// variables, which stand in for their flags), the Settings dialog's saved
// preferences, and the flags' defaults.

// flagFields maps the window's flags to the settings they fix.
var flagFields = map[string][]ui.SettingField{
	"agent":         {ui.FieldAgent},
	"script":        {ui.FieldAgent}, // --script runs the scripted agent
	"copilot-path":  {ui.FieldCopilotPath},
	"model":         {ui.FieldModel},
	"provider-url":  {ui.FieldProviderURL},
	"provider-type": {ui.FieldProviderType},
	"provider-key":  {ui.FieldProviderKey},
	"workdir":       {ui.FieldWorkDir},
	"input-timeout": {ui.FieldInputTimeout},
	"connect":       {ui.FieldRemote, ui.FieldRemoteURL, ui.FieldRemoteToken},
	"token":         {ui.FieldRemoteToken},
}

// envFlags are the environment variables that give a flag its value.
var envFlags = map[string]string{
	"PILOTDESK_TOKEN":        "token",
	"PILOTDESK_PROVIDER_URL": "provider-url",
	"PILOTDESK_PROVIDER_KEY": "provider-key",
}

// lockedFields returns the settings the command line fixes for this run,
// each with what fixed it ("--model", "PILOTDESK_PROVIDER_KEY"). fs must
// have been parsed: Visit walks the flags that were given.
func lockedFields(fs *flag.FlagSet, getenv func(string) string) map[ui.SettingField]string {
	locked := map[ui.SettingField]string{}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		given[f.Name] = true
		for _, field := range flagFields[f.Name] {
			locked[field] = "--" + f.Name
		}
	})
	for env, name := range envFlags {
		if given[name] || getenv(env) == "" {
			continue
		}
		for _, field := range flagFields[name] {
			if _, ok := locked[field]; !ok {
				locked[field] = env
			}
		}
	}
	return locked
}

// withPrefs returns the flags with the saved settings p in every place the
// command line left open, validated.
func withPrefs(cf clientFlags, locked map[ui.SettingField]string, p ui.Settings) (clientFlags, error) {
	out := cf
	free := func(f ui.SettingField) bool { _, ok := locked[f]; return !ok }
	if free(ui.FieldRemote) {
		// No --connect: the preferences say embedded or remote. The token
		// goes with the saved address unless the command line gives one.
		out.Connect = ""
		if p.Remote {
			out.Connect = p.RemoteURL
			if free(ui.FieldRemoteToken) {
				out.Token = p.RemoteToken
			}
		}
	}
	r := &out.relay
	if free(ui.FieldAgent) {
		r.Agent = p.Agent
	}
	if free(ui.FieldCopilotPath) {
		r.CopilotPath = p.CopilotPath
	}
	if free(ui.FieldModel) {
		r.Model = p.Model
	}
	if free(ui.FieldProviderURL) {
		r.ProviderURL = p.ProviderURL
	}
	if free(ui.FieldProviderType) {
		r.ProviderType = p.ProviderType
	}
	if free(ui.FieldProviderKey) {
		r.ProviderKey = p.ProviderKey
	}
	if free(ui.FieldWorkDir) {
		r.WorkDir = p.WorkDir
	}
	if free(ui.FieldInputTimeout) {
		r.InputTimeout = p.InputTimeout
	}
	if err := out.validate(); err != nil {
		return cf, err
	}
	return out, nil
}

// effectiveSettings describes flags in the Settings dialog's terms.
func effectiveSettings(cf clientFlags, notifications bool) ui.Settings {
	s := ui.Settings{
		Agent:         cf.relay.Agent,
		CopilotPath:   cf.relay.CopilotPath,
		Model:         cf.relay.Model,
		ProviderURL:   cf.relay.ProviderURL,
		ProviderType:  cf.relay.ProviderType,
		ProviderKey:   cf.relay.ProviderKey,
		WorkDir:       cf.relay.WorkDir,
		InputTimeout:  cf.relay.InputTimeout,
		Notifications: notifications,
		Remote:        cf.Connect != "",
	}
	if s.Agent == ui.AgentAuto && cf.relay.Script != "" {
		s.Agent = ui.AgentDemo
	}
	if s.Remote {
		s.RemoteURL, s.RemoteToken = cf.Connect, cf.Token
	}
	return s
}
