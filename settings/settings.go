// Package settings is the one list of pilotdesk's window settings: the
// agent, the Copilot CLI's path, the model, the provider, the working
// folder, the input timeout, the bounds on open ACP sessions, the credit
// budget, notifications and the remote relay. For each it holds the
// command-line flag and environment variable that set it, its preference
// key, its default, how it is checked, whether it is secret and whether a
// change applies live or needs the embedded relay restarted.
//
// The command line (package cli), the saved preferences and the Settings
// dialog (package ui) all read the table here; nothing else lists the
// settings. The package imports neither Fyne nor the window: preferences
// come in through the small Preferences interface, which fyne.Preferences
// satisfies.
package settings

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Settings are the values of the table's settings: what the Settings
// dialog edits, the preferences keep and the command line can fix for a
// run.
type Settings struct {
	// Agent is the embedded relay's backend: AgentAuto, AgentCopilot,
	// AgentACP or AgentDemo.
	Agent        string
	CopilotPath  string // the Copilot CLI executable; "" = copilot on PATH
	ACPCommand   string // the ACP agent's command line, for AgentACP
	Model        string // sent with every prompt; "" = the agent's default
	ProviderURL  string // bring-your-own-model endpoint (…/v1)
	ProviderType string // "openai", "azure" or "anthropic"
	ProviderKey  string // secret: never logged, shown masked
	WorkDir      string // where the agent works; "" = the current directory
	// InputTimeout is how long a question waits for an answer; 0 waits
	// forever ("never").
	InputTimeout time.Duration
	// ACPIdleClose closes the agent session of an ACP conversation left
	// idle this long; the next message loads it again. 0 keeps it open
	// ("never").
	ACPIdleClose time.Duration
	// ACPMaxSessions bounds the ACP agent sessions open at once: past it
	// the least recently used idle one is closed the same way. 0: no
	// bound.
	ACPMaxSessions int
	// BudgetCredits is the AI credits the embedded relay's agent may spend
	// in BudgetPeriod, over all conversations, before new turns are
	// refused; 0 sets no budget.
	BudgetCredits float64
	BudgetPeriod  time.Duration
	Notifications bool
	// Remote: connect to the relay at RemoteURL instead of embedding one.
	Remote      bool
	RemoteURL   string
	RemoteToken string // secret: never logged, shown masked
	// LAN: the embedded relay is reachable from the network, with TLS.
	LAN bool
}

// The agents the embedded relay can run.
const (
	AgentAuto    = "auto"
	AgentCopilot = "copilot"
	AgentACP     = "acp" // any Agent Client Protocol agent, run by ACPCommand
	AgentDemo    = "script"
)

// Field names one setting. The names are part of the preference keys
// (PrefKey) and of the log: they never change.
type Field string

const (
	FieldAgent         Field = "agent"
	FieldCopilotPath   Field = "copilotPath"
	FieldACPCommand    Field = "acpCommand"
	FieldModel         Field = "model"
	FieldProviderURL   Field = "providerURL"
	FieldProviderType  Field = "providerType"
	FieldProviderKey   Field = "providerKey"
	FieldWorkDir       Field = "workDir"
	FieldInputTimeout  Field = "inputTimeout"
	FieldACPIdleClose  Field = "acpIdleClose"
	FieldACPMaxOpen    Field = "acpMaxSessions"
	FieldBudgetCredits Field = "budgetCredits"
	FieldBudgetPeriod  Field = "budgetPeriod"
	FieldNotifications Field = "notifications"
	FieldRemote        Field = "remote"
	FieldRemoteURL     Field = "remoteURL"
	FieldRemoteToken   Field = "remoteToken"
	FieldLAN           Field = "lan"
)

// Group is what a setting configures; the dialog has a section for each.
type Group int

const (
	// GroupConnection: which relay the window talks to.
	GroupConnection Group = iota
	// GroupAgent: the embedded relay's agent. `pilotdesk serve` takes
	// these flags too.
	GroupAgent
	// GroupWindow: the window itself (the model goes with each prompt;
	// serve takes --model as the agent's default).
	GroupWindow
	// GroupBudget: the embedded relay's AI credit budget.
	GroupBudget
)

// Apply says what a change to a setting takes to apply.
type Apply int

const (
	// Live: the running window applies it at once.
	Live Apply = iota
	// Restart: the embedded relay is built with it (the relay takes its
	// input timeout only when it is created), or it names the relay to
	// talk to; a change restarts the embedded relay or connects anew.
	Restart
)

// Browse says which picker the dialog offers next to a path.
type Browse int

const (
	BrowseNone Browse = iota
	BrowseFile
	BrowseFolder
)

// Choice is one value a setting may take, with what the dialog calls it.
type Choice struct {
	Value string // as Setting.Text spells it
	Label string
}

// Kind is the type of a setting's value, which picks its input in the
// dialog.
type Kind int

const (
	KindString   Kind = iota
	KindBool          // a check box, or a radio group with Choices
	KindDuration      // typed as ParseInputTimeout reads it; Choices are suggestions
	KindNumber        // a decimal number, typed in an entry; empty is 0
	KindInt           // a whole number, typed in an entry; empty is 0
)

// Setting is one row of the table.
type Setting struct {
	Field Field
	Kind  Kind
	Group Group
	Apply Apply
	// Secret values are never logged and are shown masked.
	Secret bool
	// Default is the value of a fresh install, as Text spells it.
	Default string

	// Flag is the command-line flag that sets it ("" = none); Usage its
	// help. Env is the environment variable that stands in for the flag
	// when the flag is not given. LockedBy are the other flags that fix
	// the setting for a run: --script fixes the agent, --connect the whole
	// connection.
	Flag     string
	Usage    string
	Env      string
	LockedBy []string

	// What the dialog shows: the label, the hint under the input, the
	// placeholder of an entry (or the text of a check box), the choices of
	// a select or radio group (the suggestions of a duration), and a file
	// or folder picker.
	Label       string
	Hint        string
	Placeholder string
	Choices     []Choice
	Browse      Browse
	// Presets are what the dialog offers to fill in an entry that takes
	// any other text too, the ones whose program is installed
	// (FoundPresets): the ACP agents pilotdesk knows, by command line.
	Presets []Choice

	// The setting's value in a Settings, by its Kind.
	str     func(*Settings) *string
	boolean func(*Settings) *bool
	dur     func(*Settings) *time.Duration
	num     func(*Settings) *float64
	integer func(*Settings) *int
	// setFlag, when set, is what the flag does instead of setting the
	// value alone.
	setFlag func(s *Settings, v string)
	// used reports whether a run on s uses the setting (nil: always).
	used func(s Settings) bool
	// check returns the problem with the setting's value in s, or nil.
	check func(s Settings) *FieldError
	// preflight: check looks on disk for something a start leaves to the
	// agent, which says why it cannot start or (auto) falls back to the
	// demo and says why. Only the dialog checks it up front.
	preflight bool
}

func remoteOnly(s Settings) bool   { return s.Remote }
func embeddedOnly(s Settings) bool { return !s.Remote }

// acpOnly: the settings of the ACP backend, used when the embedded relay
// runs an ACP agent.
func acpOnly(s Settings) bool { return !s.Remote && s.Agent == AgentACP }

// neverText is how the dialog and the preferences spell "no input timeout".
const neverText = "never"

// table is every setting, in the dialog's order within each group. It is
// never modified.
var table = []Setting{
	{
		Field: FieldRemote, Group: GroupConnection, Apply: Restart, Default: "false",
		LockedBy: []string{"connect"},
		Label:    "Relay",
		Choices:  []Choice{{"false", "Embedded relay on this computer"}, {"true", "Remote relay"}},
		Kind:     KindBool, boolean: func(s *Settings) *bool { return &s.Remote },
	},
	{
		Field: FieldRemoteURL, Group: GroupConnection, Apply: Restart,
		Flag: "connect", Usage: "open on the remote relay at `URL` (ws://HOST:PORT/ws or wss://…) instead of an embedded one",
		Label: "Address", Hint: "A relay run by pilotdesk serve, e.g. on a server", Placeholder: "ws://host:7420/ws",
		Kind: KindString, str: func(s *Settings) *string { return &s.RemoteURL },
		// --connect URL picks the remote relay as well as naming it.
		setFlag: func(s *Settings, v string) { s.RemoteURL, s.Remote = v, v != "" },
		used:    remoteOnly, check: checkRemoteURL,
	},
	{
		Field: FieldRemoteToken, Group: GroupConnection, Apply: Restart, Secret: true,
		Flag: "token", Usage: "the remote relay's `TOKEN` (default: env PILOTDESK_TOKEN)", Env: "PILOTDESK_TOKEN",
		// The saved token must not go to the relay --connect names.
		LockedBy: []string{"connect"},
		Label:    "Token", Placeholder: "the relay's token",
		Kind: KindString, str: func(s *Settings) *string { return &s.RemoteToken },
		used: remoteOnly,
	},
	{
		// The embedded relay on the network: the window's relay listens on
		// every address, with TLS (a certificate of its own, made once in
		// the data dir), so that the devices of the "Connect a device…"
		// dialog can reach it. Off, it listens on 127.0.0.1 only.
		Field: FieldLAN, Group: GroupConnection, Apply: Restart, Default: "false",
		Label: "Network", Placeholder: "Reachable from my network",
		Hint: "On: devices you connect may join, over TLS",
		Kind: KindBool, boolean: func(s *Settings) *bool { return &s.LAN },
		used: embeddedOnly,
	},
	{
		Field: FieldAgent, Group: GroupAgent, Apply: Restart, Default: AgentAuto,
		Flag: "agent", Usage: "agent backend: copilot, acp, script or auto",
		// --script runs the scripted agent.
		LockedBy: []string{"script"},
		Label:    "Agent",
		Choices: []Choice{
			{AgentAuto, "Auto: Copilot when it can run, else the demo"},
			{AgentCopilot, "GitHub Copilot CLI"},
			{AgentACP, "An ACP agent (the command below)"},
			{AgentDemo, "Built-in demo (scripted)"},
		},
		Kind: KindString, str: func(s *Settings) *string { return &s.Agent },
		used: embeddedOnly, check: checkAgent,
	},
	{
		Field: FieldCopilotPath, Group: GroupAgent, Apply: Restart,
		Flag: "copilot-path", Usage: "the Copilot CLI executable (default: copilot on PATH)",
		Label: "Copilot CLI", Placeholder: "copilot on PATH", Browse: BrowseFile,
		Kind: KindString, str: func(s *Settings) *string { return &s.CopilotPath },
		used: embeddedOnly, check: checkCopilotPath, preflight: true,
	},
	{
		Field: FieldACPCommand, Group: GroupAgent, Apply: Restart,
		Flag: "acp-command", Usage: "the ACP agent's command line (`CMD`) for --agent acp, split as a shell would: \"copilot --acp\", \"opencode acp\"",
		Label: "ACP agent", Hint: "For the ACP agent: opencode acp, gemini --acp…", Placeholder: "its command line, e.g. opencode acp",
		Presets: acpPresets,
		Kind:    KindString, str: func(s *Settings) *string { return &s.ACPCommand },
		used: embeddedOnly, check: checkACPCommand,
	},
	{
		Field: FieldProviderURL, Group: GroupAgent, Apply: Restart,
		Flag: "provider-url", Env: "PILOTDESK_PROVIDER_URL",
		Usage: "bring-your-own-model: an OpenAI-compatible `URL` (…/v1) (default: env PILOTDESK_PROVIDER_URL)",
		Label: "Provider URL", Hint: "Bring your own model (OpenAI-compatible): no GitHub sign-in", Placeholder: "optional: http://127.0.0.1:8080/v1",
		Kind: KindString, str: func(s *Settings) *string { return &s.ProviderURL },
		used: embeddedOnly, check: checkProviderURL,
	},
	{
		Field: FieldProviderType, Group: GroupAgent, Apply: Restart, Default: "openai",
		Flag: "provider-type", Usage: "provider type: openai, azure or anthropic",
		Label:   "Provider type",
		Choices: []Choice{{"openai", "openai"}, {"azure", "azure"}, {"anthropic", "anthropic"}},
		Kind:    KindString, str: func(s *Settings) *string { return &s.ProviderType },
		used: embeddedOnly, check: checkProviderType,
	},
	{
		Field: FieldProviderKey, Group: GroupAgent, Apply: Restart, Secret: true,
		Flag: "provider-key", Env: "PILOTDESK_PROVIDER_KEY",
		Usage: "API `KEY` for the provider (default: env PILOTDESK_PROVIDER_KEY)",
		Label: "Provider key", Placeholder: "API key for the provider",
		Kind: KindString, str: func(s *Settings) *string { return &s.ProviderKey },
		used: embeddedOnly,
	},
	{
		// The default folder of new conversations (docs/workspaces.md):
		// the window sends it as the workspace of a new conversation's
		// first prompt, so a change applies to the next conversation
		// without a restart, and running ones keep their folders.
		Field: FieldWorkDir, Group: GroupAgent, Apply: Live,
		Flag: "workdir", Usage: "the `DIR`ectory the agent works in (default: the current directory)",
		Label: "Working folder", Hint: "New conversations start here; running ones keep theirs", Placeholder: "where pilotdesk started", Browse: BrowseFolder,
		Kind: KindString, str: func(s *Settings) *string { return &s.WorkDir },
		used: embeddedOnly, check: checkWorkDir,
	},
	{
		// The relay takes its input timeout when it is created
		// (relay.Config): a change restarts it.
		Field: FieldInputTimeout, Group: GroupAgent, Apply: Restart, Default: "5m",
		Flag: "input-timeout", Usage: "how long an input request waits for an answer; 0 waits forever",
		Label: "Input timeout", Hint: "How long a question waits: 90s, 5m, 1h… or never",
		Choices: []Choice{{"1m", "1m"}, {"5m", "5m"}, {"15m", "15m"}, {"1h", "1h"}, {neverText, neverText}},
		Kind:    KindDuration, dur: func(s *Settings) *time.Duration { return &s.InputTimeout },
		used: embeddedOnly, check: checkInputTimeout,
	},
	{
		// Claude Code keeps a process of 200+ MB per open session: an
		// idle conversation's session is closed, and loaded again by its
		// next message (docs/acp.md, Sessions). The backend takes both
		// when it is created.
		Field: FieldACPIdleClose, Group: GroupAgent, Apply: Restart, Default: "10m",
		Flag: "acp-idle-close", Usage: "close the ACP agent session of a conversation idle this long (its next message loads it again); 0 keeps it open",
		Label: "Idle ACP session", Hint: "Closed after this long idle, reloaded by the next message: 10m, 1h… or never",
		Choices: []Choice{{"5m", "5m"}, {"10m", "10m"}, {"30m", "30m"}, {"1h", "1h"}, {neverText, neverText}},
		Kind:    KindDuration, dur: func(s *Settings) *time.Duration { return &s.ACPIdleClose },
		used: acpOnly, check: checkACPIdleClose,
	},
	{
		Field: FieldACPMaxOpen, Group: GroupAgent, Apply: Restart, Default: "6",
		Flag: "acp-max-sessions", Usage: "at most `N` ACP agent sessions open at once: past it the least recently used idle one is closed (its next message loads it again); 0: no bound",
		Label: "Open ACP sessions", Hint: "At most this many; the least recently used idle one closes first. 0: no bound", Placeholder: "0 (no bound)",
		Kind: KindInt, integer: func(s *Settings) *int { return &s.ACPMaxSessions },
		used: acpOnly, check: checkACPMaxSessions,
	},
	{
		// The relay takes its budget when it is created, and reads the
		// spend of the period from its store then.
		Field: FieldBudgetCredits, Group: GroupBudget, Apply: Restart, Default: "0",
		Flag: "budget-credits", Usage: "refuse new turns once this many AI credits (`N`) were spent in --budget-period, over all conversations; 0: no budget",
		Label: "Budget", Hint: "AI credits a period; 0: none", Placeholder: "0 (no budget)",
		Kind: KindNumber, num: func(s *Settings) *float64 { return &s.BudgetCredits },
		used: embeddedOnly, check: checkBudgetCredits,
	},
	{
		Field: FieldBudgetPeriod, Group: GroupBudget, Apply: Restart, Default: "720h",
		Flag: "budget-period", Usage: "the budget counts the credits spent in the last `D` (at least 1h; 720h is 30 days)",
		Label: "Budget period", Hint: "24h, 168h (a week), 720h (30 days)…",
		Choices: []Choice{{"24h", "24h"}, {"168h", "168h"}, {"720h", "720h"}},
		Kind:    KindDuration, dur: func(s *Settings) *time.Duration { return &s.BudgetPeriod },
		used: embeddedOnly, check: checkBudgetPeriod,
	},
	{
		// The window sends the model with each prompt.
		Field: FieldModel, Group: GroupWindow, Apply: Live,
		Flag: "model", Usage: "model for new conversations (default: the CLI's)",
		Label: "Model", Hint: "Sent with each prompt; applies from the next one", Placeholder: "the agent's default",
		Kind: KindString, str: func(s *Settings) *string { return &s.Model },
		check: checkModel,
	},
	{
		// The window reads it when it has something to notify.
		Field: FieldNotifications, Group: GroupWindow, Apply: Live, Default: "true",
		Label: "Notify me", Hint: "While pilotdesk is in the background", Placeholder: "When the agent asks or finishes",
		Kind: KindBool, boolean: func(s *Settings) *bool { return &s.Notifications },
	},
}

// All returns every setting, in the dialog's order within each group: a
// copy, so that no caller can change the table.
func All() []Setting { return slices.Clone(table) }

// Lookup returns the setting f. It panics on a Field that is not one of
// the constants: that is a programming error.
func Lookup(f Field) Setting {
	for _, r := range table {
		if r.Field == f {
			return r
		}
	}
	panic(fmt.Sprintf("settings: no setting %q", f))
}

// Defaults are the settings of a fresh install: the flags' defaults.
func Defaults() Settings {
	var s Settings
	for _, r := range table {
		if err := r.SetText(&s, r.Default); err != nil {
			panic(fmt.Sprintf("settings: the default of %s: %v", r.Field, err))
		}
	}
	return s
}

// PrefKey is the preference key of the setting. Keys are stable: changing
// one loses what users saved.
func (r Setting) PrefKey() string { return "settings." + string(r.Field) }

// InUse reports whether a run on s uses the setting: the remote relay's
// address and token only when s.Remote, the agent's settings only when not.
func (r Setting) InUse(s Settings) bool { return r.used == nil || r.used(s) }

// Text is the setting's value in s as the dialog and the preferences spell
// it: a duration as FormatInputTimeout does, a bool as "true" or "false".
func (r Setting) Text(s Settings) string {
	switch r.Kind {
	case KindBool:
		return strconv.FormatBool(*r.boolean(&s))
	case KindDuration:
		return FormatInputTimeout(*r.dur(&s))
	case KindNumber:
		return strconv.FormatFloat(*r.num(&s), 'f', -1, 64)
	case KindInt:
		return strconv.Itoa(*r.integer(&s))
	}
	return *r.str(&s)
}

// SetText sets the setting in s from text as a person types it: spaces
// around it are dropped, a duration is read by ParseInputTimeout.
func (r Setting) SetText(s *Settings, text string) error {
	text = strings.TrimSpace(text)
	switch r.Kind {
	case KindBool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return fmt.Errorf("%q is neither true nor false", text)
		}
		*r.boolean(s) = b
	case KindDuration:
		d, err := ParseInputTimeout(text)
		if err != nil {
			return err
		}
		*r.dur(s) = d
	case KindNumber:
		n, err := ParseNumber(text)
		if err != nil {
			return err
		}
		*r.num(s) = n
	case KindInt:
		n, err := ParseInt(text)
		if err != nil {
			return err
		}
		*r.integer(s) = n
	default:
		*r.str(s) = text
	}
	return nil
}

// Copy sets the setting in dst to its value in src.
func (r Setting) Copy(dst *Settings, src Settings) {
	switch r.Kind {
	case KindBool:
		*r.boolean(dst) = *r.boolean(&src)
	case KindDuration:
		*r.dur(dst) = *r.dur(&src)
	case KindNumber:
		*r.num(dst) = *r.num(&src)
	case KindInt:
		*r.integer(dst) = *r.integer(&src)
	default:
		*r.str(dst) = *r.str(&src)
	}
}

// Equal reports whether a and b hold the same value of the setting.
func (r Setting) Equal(a, b Settings) bool {
	switch r.Kind {
	case KindBool:
		return *r.boolean(&a) == *r.boolean(&b)
	case KindDuration:
		return *r.dur(&a) == *r.dur(&b)
	case KindNumber:
		return *r.num(&a) == *r.num(&b)
	case KindInt:
		return *r.integer(&a) == *r.integer(&b)
	}
	return *r.str(&a) == *r.str(&b)
}

// ChoiceLabel is the label of value among the setting's choices; the
// first choice's label for a value that is none of them (a preference
// edited by hand).
func (r Setting) ChoiceLabel(value string) string {
	for _, c := range r.Choices {
		if c.Value == value {
			return c.Label
		}
	}
	if len(r.Choices) == 0 {
		return value
	}
	return r.Choices[0].Label
}

// ChoiceValue is the inverse of ChoiceLabel: the value of the choice
// labelled label, or the first choice's.
func (r Setting) ChoiceValue(label string) string {
	for _, c := range r.Choices {
		if c.Label == label {
			return c.Value
		}
	}
	if len(r.Choices) == 0 {
		return label
	}
	return r.Choices[0].Value
}

// NeedsRestart reports whether going from old to s restarts the embedded
// relay (or connects to another relay): a setting that applies only at
// restart changed, and a run on old or on s uses it.
func NeedsRestart(old, s Settings) bool {
	for _, r := range table {
		if r.Apply != Restart || (!r.InUse(old) && !r.InUse(s)) {
			continue
		}
		if !r.Equal(old, s) {
			return true
		}
	}
	return false
}

// masked stands in for a secret in logs and text.
func masked(secret string) string {
	if secret == "" {
		return ""
	}
	return "********"
}

// Masked returns s with its secrets masked, for showing or logging.
func (s Settings) Masked() Settings {
	for _, r := range table {
		if r.Secret {
			*r.str(&s) = masked(*r.str(&s))
		}
	}
	return s
}

// LogValue keeps the secrets out of logs: slog calls it for a Settings
// value.
func (s Settings) LogValue() slog.Value {
	s = s.Masked()
	attrs := make([]slog.Attr, 0, len(table))
	for _, r := range table {
		if r.Kind == KindBool {
			attrs = append(attrs, slog.Bool(string(r.Field), *r.boolean(&s)))
		} else {
			attrs = append(attrs, slog.String(string(r.Field), r.Text(s)))
		}
	}
	return slog.GroupValue(attrs...)
}

// String keeps the secrets out of fmt's %v and %+v.
func (s Settings) String() string {
	type plain Settings // no String method: no recursion
	return fmt.Sprintf("%+v", plain(s.Masked()))
}

// GoString keeps the secrets out of fmt's %#v.
func (s Settings) GoString() string { return "settings.Settings" + s.String() }
