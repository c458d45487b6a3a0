package settings

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	want := Settings{Agent: AgentAuto, ProviderType: "openai", InputTimeout: 5 * time.Minute, ACPIdleClose: 10 * time.Minute, ACPMaxSessions: 6,
		BudgetPeriod: 720 * time.Hour, Notifications: true}
	if got := Defaults(); got != want {
		t.Fatalf("Defaults() = %+v, want %+v", got, want)
	}
	if errs := Defaults().Validate(); len(errs) != 0 {
		t.Fatalf("the defaults do not validate: %v", errs)
	}
}

// TestTable checks what must hold of every row: users' saved preferences
// depend on the keys, the command line on the flags.
func TestTable(t *testing.T) {
	var keys []string
	flags := map[string]Field{}
	for _, r := range All() {
		keys = append(keys, r.PrefKey())
		if r.Flag != "" {
			if other, dup := flags[r.Flag]; dup {
				t.Errorf("--%s sets both %s and %s", r.Flag, other, r.Field)
			}
			flags[r.Flag] = r.Field
		}
		if r.Env != "" && r.Kind != KindString {
			t.Errorf("%s has an environment variable but is not a string", r.Field)
		}
		if r.Env != "" && r.Flag == "" {
			t.Errorf("%s has an environment variable but no flag", r.Field)
		}
		if r.Label == "" {
			t.Errorf("%s has no label for the dialog", r.Field)
		}
		for _, c := range r.Choices {
			s := Defaults()
			if err := r.SetText(&s, c.Value); err != nil {
				t.Errorf("%s: choice %q: %v", r.Field, c.Value, err)
			}
		}
		if got := Lookup(r.Field).Field; got != r.Field {
			t.Errorf("Lookup(%s) = %s", r.Field, got)
		}
	}
	sort.Strings(keys)
	want := []string{
		"settings.acpCommand", "settings.acpIdleClose", "settings.acpMaxSessions", "settings.agent", "settings.budgetCredits", "settings.budgetPeriod", "settings.copilotPath", "settings.inputTimeout", "settings.lan", "settings.model", "settings.notifications",
		"settings.providerKey", "settings.providerType", "settings.providerURL", "settings.remote", "settings.remoteToken",
		"settings.remoteURL", "settings.workDir",
	}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("preference keys %v\nwant %v", keys, want)
	}
	for f, secret := range map[Field]bool{FieldProviderKey: true, FieldRemoteToken: true, FieldModel: false, FieldRemoteURL: false} {
		if Lookup(f).Secret != secret {
			t.Errorf("%s: secret %v, want %v", f, !secret, secret)
		}
	}
	for f, apply := range map[Field]Apply{
		FieldModel: Live, FieldNotifications: Live, FieldInputTimeout: Restart, FieldAgent: Restart,
		FieldCopilotPath: Restart, FieldProviderURL: Restart, FieldWorkDir: Live, FieldRemote: Restart,
		FieldBudgetCredits: Restart, FieldBudgetPeriod: Restart, FieldACPIdleClose: Restart, FieldACPMaxOpen: Restart,
	} {
		if Lookup(f).Apply != apply {
			t.Errorf("%s: apply %d, want %d", f, Lookup(f).Apply, apply)
		}
	}
}

func TestInputTimeoutText(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"5m", 5 * time.Minute, ""},
		{" 90s ", 90 * time.Second, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"never", 0, ""},
		{"Never", 0, ""},
		{"0", 0, ""},
		{"soon", 0, `"soon" is not a duration: write it like 90s, 5m or 1h, or never`},
		{"5", 0, `"5" is not a duration`},
		{"-3m", 0, `"-3m" must be longer than zero, or never`},
	} {
		got, err := ParseInputTimeout(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseInputTimeout(%q) error %v, want %q", c.in, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseInputTimeout(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for d, want := range map[time.Duration]string{5 * time.Minute: "5m", 90 * time.Second: "1m30s", 2 * time.Hour: "2h", 0: "never"} {
		if got := FormatInputTimeout(d); got != want {
			t.Errorf("FormatInputTimeout(%v) = %q, want %q", d, got, want)
		}
		back, err := ParseInputTimeout(FormatInputTimeout(d))
		if err != nil || back != d {
			t.Errorf("round trip of %v: %v, %v", d, back, err)
		}
	}
}

func TestValidateMessages(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := Defaults()
	for _, c := range []struct {
		name  string
		edit  func(*Settings)
		field Field
		msg   string
		flag  string
	}{
		{"remote without address", func(s *Settings) { s.Remote = true }, FieldRemoteURL, "Enter the relay's address, such as ws://host:7420/ws", `--connect must be a ws:// or wss:// URL`},
		{"remote http", func(s *Settings) { s.Remote, s.RemoteURL = true, "http://host:7420/ws" }, FieldRemoteURL, `"http://host:7420/ws" is not a relay address: use ws://host:7420/ws or wss://host/ws`, `--connect must be a ws:// or wss:// URL such as ws://host:7420/ws, not "http://host:7420/ws"`},
		{"remote no host", func(s *Settings) { s.Remote, s.RemoteURL = true, "ws:///ws" }, FieldRemoteURL, "is not a relay address", "--connect"},
		{"provider ftp", func(s *Settings) { s.ProviderURL, s.Model = "ftp://x/v1", "m" }, FieldProviderURL, `"ftp://x/v1" is not a provider URL: use http(s)://host:port/v1`, `--provider-url must be an http(s) URL such as http://127.0.0.1:8080/v1, not "ftp://x/v1"`},
		{"provider type", func(s *Settings) { s.ProviderType = "llama" }, FieldProviderType, `Unknown provider type "llama": pick openai, azure or anthropic`, `--provider-type must be openai, azure or anthropic, not "llama"`},
		{"missing dir", func(s *Settings) { s.WorkDir = filepath.Join(dir, "nope") }, FieldWorkDir, `The folder "` + filepath.Join(dir, "nope") + `" does not exist`, "--workdir"},
		{"file as dir", func(s *Settings) { s.WorkDir = file }, FieldWorkDir, "is a file, not a folder", `--workdir "` + file + `" is not a directory`},
		{"copilot missing", func(s *Settings) { s.CopilotPath = filepath.Join(dir, "copilot") }, FieldCopilotPath, "No Copilot CLI at", "--copilot-path"},
		{"agent", func(s *Settings) { s.Agent = "gpt" }, FieldAgent, `Unknown agent "gpt"`, `--agent must be auto, copilot, acp or script, not "gpt"`},
		{"acp without command", func(s *Settings) { s.Agent, s.ACPCommand = AgentACP, " " }, FieldACPCommand, "Enter the ACP agent's command line", "--agent acp needs --acp-command CMD"},
		{"negative timeout", func(s *Settings) { s.InputTimeout = -time.Second }, FieldInputTimeout, "must be longer than zero", "--input-timeout must be 0 (wait forever) or positive, not -1s"},
		{"provider without model", func(s *Settings) { s.ProviderURL = "http://127.0.0.1:8080/v1" }, FieldModel, "Enter the model to use with the provider URL", "--provider-url needs --model"},
		{"negative budget", func(s *Settings) { s.BudgetCredits = -5 }, FieldBudgetCredits, "The budget is a number of AI credits from 0 (no budget) up", "--budget-credits must be a number of AI credits from 0 (no budget) to 1000000000, not -5"},
		{"short budget period", func(s *Settings) { s.BudgetPeriod = 30 * time.Minute }, FieldBudgetPeriod, "must be at least an hour", "--budget-period must be at least 1h (such as 24h or 720h), not 30m0s"},
		{"negative idle close", func(s *Settings) { s.ACPIdleClose = -time.Minute }, FieldACPIdleClose, "longer than zero, or never", "--acp-idle-close must be 0 (never) or positive, not -1m0s"},
		{"negative open sessions", func(s *Settings) { s.ACPMaxSessions = -1 }, FieldACPMaxOpen, "from 1 up, or 0 for no bound", "--acp-max-sessions must be 0 (no bound) or positive, not -1"},
	} {
		s := base
		c.edit(&s)
		errs := s.ValidateAll()
		if len(errs) != 1 || errs[0].Field != c.field || !strings.Contains(errs[0].Message, c.msg) || !strings.Contains(errs[0].Flag, c.flag) {
			t.Errorf("%s: %+v, want one error on %s containing %q and %q", c.name, errs, c.field, c.msg, c.flag)
		}
	}
	ok := base
	ok.Remote, ok.RemoteURL, ok.WorkDir, ok.ProviderURL, ok.Model = true, "wss://relay.example.com/ws", dir, "http://127.0.0.1:8080/v1", "gpt-4.1"
	ok.BudgetCredits, ok.BudgetPeriod = 12.5, time.Hour
	if errs := ok.ValidateAll(); len(errs) != 0 {
		t.Errorf("valid settings refused: %v", errs)
	}
	// Settings saved before the budget have no period: without a budget
	// that is no problem.
	ok.BudgetCredits, ok.BudgetPeriod = 0, 0
	if errs := ok.ValidateAll(); len(errs) != 0 {
		t.Errorf("valid settings refused: %v", errs)
	}
}

// TestValidateChecksWhatARunUses: a start checks the settings it uses and
// leaves the Copilot CLI's path to the agent; the dialog checks them all.
func TestValidateChecksWhatARunUses(t *testing.T) {
	s := Defaults()
	s.CopilotPath = filepath.Join(t.TempDir(), "copilot")
	s.WorkDir = filepath.Join(t.TempDir(), "gone")
	s.ProviderURL = "http://127.0.0.1:8080/v1" // and no model
	fields := func(errs []FieldError) string {
		var out []string
		for _, e := range errs {
			out = append(out, string(e.Field))
		}
		return strings.Join(out, " ")
	}
	if got := fields(s.Validate()); got != "workDir model" {
		t.Errorf("embedded, Validate: %s", got)
	}
	if got := fields(s.ValidateAll()); got != "copilotPath workDir model" {
		t.Errorf("embedded, ValidateAll: %s", got)
	}
	s.Remote, s.RemoteURL = true, "ws://relay.example.com/ws"
	if got := fields(s.Validate()); got != "" {
		t.Errorf("remote, Validate checks the unused agent settings: %s", got)
	}
	if got := fields(s.ValidateAll()); got != "copilotPath workDir" {
		t.Errorf("remote, ValidateAll: %s", got)
	}
}

func TestNeedsRestart(t *testing.T) {
	base := Defaults()
	remote := base
	remote.Remote, remote.RemoteURL = true, "ws://a/ws"
	for _, c := range []struct {
		name      string
		old, edit func(*Settings)
		want      bool
	}{
		{"model only", nil, func(s *Settings) { s.Model = "gpt-5" }, false},
		{"notifications only", nil, func(s *Settings) { s.Notifications = false }, false},
		{"agent", nil, func(s *Settings) { s.Agent = AgentDemo }, true},
		{"workdir: the default folder of new conversations", nil, func(s *Settings) { s.WorkDir = "/tmp" }, false},
		{"key", nil, func(s *Settings) { s.ProviderKey = "k" }, true},
		{"timeout", nil, func(s *Settings) { s.InputTimeout = 0 }, true},
		{"to remote", nil, func(s *Settings) { s.Remote, s.RemoteURL = true, "ws://a/ws" }, true},
		{"remote address unused when embedded", nil, func(s *Settings) { s.RemoteURL = "ws://b/ws" }, false},
		{"remote: agent unused", func(s *Settings) { *s = remote }, func(s *Settings) { *s = remote; s.Agent = AgentDemo }, false},
		{"remote: new token", func(s *Settings) { *s = remote }, func(s *Settings) { *s = remote; s.RemoteToken = "t" }, true},
		{"remote: model", func(s *Settings) { *s = remote }, func(s *Settings) { *s = remote; s.Model = "m" }, false},
	} {
		old, s := base, base
		if c.old != nil {
			c.old(&old)
		}
		c.edit(&s)
		if got := NeedsRestart(old, s); got != c.want {
			t.Errorf("%s: NeedsRestart = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSecretsNeverPrinted: the key and the token are masked in slog and
// fmt output of Settings.
func TestSecretsNeverPrinted(t *testing.T) {
	s := Defaults()
	s.ProviderKey, s.RemoteToken = "sk-live-SECRET-1", "tok-SECRET-2"
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	logger.Info("settings", "settings", s)
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("settings", "settings", s)
	for _, out := range []string{buf.String(), s.String(), s.GoString(), fmt.Sprintf("%v %+v %#v", s, s, s)} {
		if strings.Contains(out, "SECRET") {
			t.Fatalf("a secret leaked: %s", out)
		}
		if !strings.Contains(out, "********") {
			t.Fatalf("no masked value in %s", out)
		}
	}
	if !strings.Contains(buf.String(), "settings.providerKey=********") || !strings.Contains(buf.String(), "settings.inputTimeout=5m") {
		t.Fatalf("log: %s", buf.String())
	}
}

// fakePrefs is a preference store in a map, as fyne.Preferences keeps one.
type fakePrefs map[string]any

func (p fakePrefs) StringWithFallback(key, fallback string) string {
	if v, ok := p[key].(string); ok {
		return v
	}
	return fallback
}
func (p fakePrefs) SetString(key, value string) { p[key] = value }
func (p fakePrefs) BoolWithFallback(key string, fallback bool) bool {
	if v, ok := p[key].(bool); ok {
		return v
	}
	return fallback
}
func (p fakePrefs) SetBool(key string, value bool) { p[key] = value }

// batchPrefs offers the one-write batch of Fyne's own preferences.
type batchPrefs struct {
	fakePrefs
	writes int
}

func (p *batchPrefs) WriteValues(f func(map[string]any)) {
	p.writes++
	f(p.fakePrefs)
}

// TestPrefsRoundTrip: what Save writes, Load reads back, under today's
// keys; what is missing comes from the defaults.
func TestPrefsRoundTrip(t *testing.T) {
	def := Defaults()
	p := fakePrefs{}
	if got := Load(p, def); got != def {
		t.Fatalf("empty preferences: %+v, want the defaults", got)
	}
	s := Settings{Agent: AgentCopilot, CopilotPath: "/opt/copilot", Model: "gpt-5", ProviderURL: "http://127.0.0.1:8080/v1",
		ProviderType: "azure", ProviderKey: "k", WorkDir: "/src", InputTimeout: 0, Notifications: false,
		Remote: true, RemoteURL: "wss://relay/ws", RemoteToken: "t", BudgetCredits: 12.5, BudgetPeriod: 168 * time.Hour,
		ACPIdleClose: 0, ACPMaxSessions: 2}
	Save(p, s)
	if got := Load(p, def); got != s {
		t.Fatalf("read back %+v, want %+v", got, s)
	}
	// What users saved before this package existed: the same keys and
	// spellings.
	for k, v := range map[string]any{
		"settings.agent": "copilot", "settings.inputTimeout": "never", "settings.notifications": false,
		"settings.remote": true, "settings.remoteToken": "t", "settings.providerType": "azure",
		"settings.budgetCredits": "12.5", "settings.budgetPeriod": "168h",
		"settings.acpIdleClose": "never", "settings.acpMaxSessions": "2",
	} {
		if p[k] != v {
			t.Errorf("%s = %#v, want %#v", k, p[k], v)
		}
	}
	old := fakePrefs{"settings.model": "saved", "settings.inputTimeout": "1h30m", "settings.remote": false}
	if got := Load(old, def); got.Model != "saved" || got.InputTimeout != 90*time.Minute || got.Agent != AgentAuto {
		t.Fatalf("old preferences read as %+v", got)
	}

	b := &batchPrefs{fakePrefs: fakePrefs{}}
	s.Model, s.Remote, s.InputTimeout = "other", false, time.Hour
	Save(b, s)
	if b.writes != 1 {
		t.Fatalf("%d writes, want one batch", b.writes)
	}
	if got := Load(b, def); got != s {
		t.Fatalf("read back %+v, want %+v", got, s)
	}
	// A value the user could not have typed falls back to the default.
	b.SetString(Lookup(FieldInputTimeout).PrefKey(), "soon")
	if got := Load(b, def).InputTimeout; got != def.InputTimeout {
		t.Fatalf("bad stored timeout read as %v", got)
	}
	b.SetString(Lookup(FieldBudgetCredits).PrefKey(), "lots")
	if got := Load(b, def).BudgetCredits; got != def.BudgetCredits {
		t.Fatalf("bad stored budget read as %v", got)
	}
}

// parse registers the window's flags (every group) and parses args.
func parse(t *testing.T, env map[string]string, args ...string) (Settings, map[Field]string) {
	t.Helper()
	getenv := func(k string) string { return env[k] }
	fs := flag.NewFlagSet("pilotdesk", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var s Settings
	RegisterFlags(fs, &s, getenv, GroupConnection, GroupAgent, GroupWindow, GroupBudget)
	fs.String("script", "", "not a setting, but it fixes the agent")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return s, Locked(fs, getenv)
}

// TestPrecedence: flag > environment > saved preference > default, and
// Locked names what fixed each setting.
func TestPrecedence(t *testing.T) {
	saved := Defaults()
	saved.Model, saved.ProviderKey, saved.InputTimeout, saved.Notifications = "saved-model", "saved-key", 2*time.Minute, false
	remote := saved
	remote.Remote, remote.RemoteURL, remote.RemoteToken = true, "ws://saved.example.com/ws", "saved-token"
	for _, c := range []struct {
		name   string
		env    map[string]string
		args   []string
		saved  Settings
		want   func(Settings) Settings
		locked map[Field]string
	}{
		{
			name: "defaults", saved: Defaults(),
			want:   func(s Settings) Settings { return Defaults() },
			locked: map[Field]string{},
		},
		{
			name: "saved over defaults", saved: saved,
			want:   func(s Settings) Settings { return saved },
			locked: map[Field]string{},
		},
		{
			name: "flags over saved", saved: saved, args: []string{"--model", "flag-model", "--input-timeout", "0", "--agent", "script"},
			want: func(s Settings) Settings {
				s.Model, s.InputTimeout, s.Agent = "flag-model", 0, AgentDemo
				return s
			},
			locked: map[Field]string{FieldModel: "--model", FieldInputTimeout: "--input-timeout", FieldAgent: "--agent"},
		},
		{
			name: "environment over saved", saved: saved, env: map[string]string{"PILOTDESK_PROVIDER_KEY": "env-key"},
			want:   func(s Settings) Settings { s.ProviderKey = "env-key"; return s },
			locked: map[Field]string{FieldProviderKey: "PILOTDESK_PROVIDER_KEY"},
		},
		{
			name: "flag over its environment variable", saved: saved, env: map[string]string{"PILOTDESK_PROVIDER_KEY": "env-key"},
			args:   []string{"--provider-key", "flag-key"},
			want:   func(s Settings) Settings { s.ProviderKey = "flag-key"; return s },
			locked: map[Field]string{FieldProviderKey: "--provider-key"},
		},
		{
			name: "saved remote relay", saved: remote,
			want:   func(s Settings) Settings { return remote },
			locked: map[Field]string{},
		},
		{
			name: "saved remote relay, token from the environment", saved: remote, env: map[string]string{"PILOTDESK_TOKEN": "env-token"},
			want:   func(s Settings) Settings { s.RemoteToken = "env-token"; return s },
			locked: map[Field]string{FieldRemoteToken: "PILOTDESK_TOKEN"},
		},
		{
			name: "--connect over the saved relay", saved: remote, args: []string{"--connect", "wss://flag.example.com/ws"},
			// The saved token must not go to another relay.
			want:   func(s Settings) Settings { s.RemoteURL, s.RemoteToken = "wss://flag.example.com/ws", ""; return s },
			locked: map[Field]string{FieldRemote: "--connect", FieldRemoteURL: "--connect", FieldRemoteToken: "--connect"},
		},
		{
			name: "--connect over the saved embedded relay, --token", saved: saved, args: []string{"--connect", "ws://flag/ws", "--token", "flag-token"},
			want: func(s Settings) Settings {
				s.Remote, s.RemoteURL, s.RemoteToken = true, "ws://flag/ws", "flag-token"
				return s
			},
			locked: map[Field]string{FieldRemote: "--connect", FieldRemoteURL: "--connect", FieldRemoteToken: "--token"},
		},
		{
			name: "--script fixes the agent", saved: saved, args: []string{"--script", "x.json"},
			want:   func(s Settings) Settings { return s },
			locked: map[Field]string{FieldAgent: "--script"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd, locked := parse(t, c.env, c.args...)
			if fmt.Sprint(locked) != fmt.Sprint(c.locked) {
				t.Errorf("locked %v, want %v", locked, c.locked)
			}
			p := fakePrefs{}
			Save(p, c.saved)
			got := Merge(cmd, Load(p, Defaults()), locked)
			if want := c.want(c.saved); got != want {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestFlags: the flags' defaults are the table's (or the environment's),
// and -h never shows a secret.
func TestFlags(t *testing.T) {
	env := map[string]string{"PILOTDESK_PROVIDER_KEY": "sk-SECRET", "PILOTDESK_PROVIDER_URL": "http://env/v1"}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var s Settings
	RegisterFlags(fs, &s, func(k string) string { return env[k] }, GroupAgent, GroupWindow, GroupBudget)
	want := Defaults()
	want.Notifications = false // no flag
	want.ProviderKey, want.ProviderURL = "sk-SECRET", "http://env/v1"
	if s != want {
		t.Fatalf("before parsing: %+v\nwant %+v", s, want)
	}
	if fs.Lookup("connect") != nil || fs.Lookup("token") != nil {
		t.Fatal("the connection's flags were registered for the agent and window groups")
	}
	var help bytes.Buffer
	fs.SetOutput(&help)
	fs.PrintDefaults()
	if strings.Contains(help.String(), "SECRET") || !strings.Contains(help.String(), "http://env/v1") {
		t.Fatalf("-h:\n%s", help.String())
	}
	for _, name := range []string{"agent", "copilot-path", "model", "provider-url", "provider-type", "provider-key", "workdir", "input-timeout", "acp-idle-close", "acp-max-sessions", "budget-credits", "budget-period"} {
		if fs.Lookup(name) == nil {
			t.Errorf("no --%s", name)
		}
	}
	if err := fs.Parse([]string{"--input-timeout", "90s", "--agent", "copilot", "--budget-credits", "7.5", "--budget-period", "24h", "--acp-idle-close", "20m", "--acp-max-sessions", "3"}); err != nil {
		t.Fatal(err)
	}
	if s.InputTimeout != 90*time.Second || s.Agent != AgentCopilot || s.BudgetCredits != 7.5 || s.BudgetPeriod != 24*time.Hour ||
		s.ACPIdleClose != 20*time.Minute || s.ACPMaxSessions != 3 {
		t.Fatalf("after parsing: %+v", s)
	}
}

// TestBudgetText: the budget reads as the dialog's entry holds it, and
// reads back from what it writes.
func TestBudgetText(t *testing.T) {
	r := Lookup(FieldBudgetCredits)
	for in, want := range map[string]float64{"": 0, "0": 0, " 50 ": 50, "12.5": 12.5, "12,5": 12.5} {
		s := Defaults()
		if err := r.SetText(&s, in); err != nil || s.BudgetCredits != want {
			t.Errorf("SetText(%q): %v, %v; want %v", in, s.BudgetCredits, err, want)
		}
		back := s
		if err := r.SetText(&back, r.Text(s)); err != nil || back.BudgetCredits != want {
			t.Errorf("round trip of %q through %q: %v, %v", in, r.Text(s), back.BudgetCredits, err)
		}
	}
	for _, in := range []string{"lots", "NaN", "Inf", "1e999"} {
		s := Defaults()
		if err := r.SetText(&s, in); err == nil || !strings.Contains(err.Error(), "is not a number") {
			t.Errorf("SetText(%q) = %v, %v; want an error", in, s.BudgetCredits, err)
		}
	}
	if got := Lookup(FieldBudgetPeriod).Text(Defaults()); got != "720h" {
		t.Errorf("the default period reads %q", got)
	}
}

// TestACPSessionsText: the bounds on open ACP sessions read as the
// dialog's entries hold them, and read back from what they write.
func TestACPSessionsText(t *testing.T) {
	r := Lookup(FieldACPMaxOpen)
	for in, want := range map[string]int{"": 0, "0": 0, " 6 ": 6, "12": 12} {
		s := Defaults()
		if err := r.SetText(&s, in); err != nil || s.ACPMaxSessions != want {
			t.Errorf("SetText(%q): %v, %v; want %v", in, s.ACPMaxSessions, err, want)
		}
		back := s
		if err := r.SetText(&back, r.Text(s)); err != nil || back.ACPMaxSessions != want {
			t.Errorf("round trip of %q through %q: %v, %v", in, r.Text(s), back.ACPMaxSessions, err)
		}
	}
	for _, in := range []string{"many", "2.5", "1e3"} {
		s := Defaults()
		if err := r.SetText(&s, in); err == nil || !strings.Contains(err.Error(), "is not a whole number") {
			t.Errorf("SetText(%q) = %v, %v; want an error", in, s.ACPMaxSessions, err)
		}
	}
	idle := Lookup(FieldACPIdleClose)
	if got := idle.Text(Defaults()); got != "10m" {
		t.Errorf("the default idle close reads %q", got)
	}
	s := Defaults()
	if err := idle.SetText(&s, "never"); err != nil || s.ACPIdleClose != 0 {
		t.Errorf("never: %v, %v", s.ACPIdleClose, err)
	}
}
