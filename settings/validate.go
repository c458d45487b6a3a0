package settings

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// FieldError is a problem with one setting, worded twice: for the person
// who typed it in the Settings dialog, and for the command line, naming
// the flag.
type FieldError struct {
	Field   Field
	Message string // "Unknown agent "gpt": pick auto, Copilot, an ACP agent or the demo"
	Flag    string // "--agent must be auto, copilot, acp or script, not "gpt""
}

func (e FieldError) Error() string { return e.Message }

func problem(f Field, flag, format string, a ...any) *FieldError {
	return &FieldError{Field: f, Message: fmt.Sprintf(format, a...), Flag: flag}
}

// Validate returns the problems a run on s would refuse, one per bad
// setting, in the table's order. It checks only what the run uses (not the
// agent's settings when the relay is remote, as the embedded relay does not
// run), and it leaves the Copilot CLI's path to the agent, which says why
// it cannot start or falls back to the demo.
func (s Settings) Validate() []FieldError {
	return s.validate(func(r Setting) bool { return r.InUse(s) && !r.preflight })
}

// ValidateAll is Validate for a person editing every setting at once (the
// Settings dialog): it checks the settings the run would not use as well,
// and whether the Copilot CLI is where CopilotPath says.
func (s Settings) ValidateAll() []FieldError {
	return s.validate(func(Setting) bool { return true })
}

func (s Settings) validate(want func(Setting) bool) []FieldError {
	var errs []FieldError
	for _, r := range table {
		if r.check == nil || !want(r) {
			continue
		}
		if e := r.check(s); e != nil {
			errs = append(errs, *e)
		}
	}
	return errs
}

func checkRemoteURL(s Settings) *FieldError {
	if !s.Remote {
		return nil
	}
	raw := strings.TrimSpace(s.RemoteURL)
	flag := fmt.Sprintf("--connect must be a ws:// or wss:// URL such as ws://host:7420/ws, not %q", s.RemoteURL)
	if raw == "" {
		return problem(FieldRemoteURL, flag, "Enter the relay's address, such as ws://host:7420/ws")
	}
	if u, err := url.Parse(raw); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return problem(FieldRemoteURL, flag, "%q is not a relay address: use ws://host:7420/ws or wss://host/ws", s.RemoteURL)
	}
	return nil
}

func checkAgent(s Settings) *FieldError {
	switch s.Agent {
	case AgentAuto, AgentCopilot, AgentACP, AgentDemo:
		return nil
	}
	return problem(FieldAgent, fmt.Sprintf("--agent must be auto, copilot, acp or script, not %q", s.Agent),
		"Unknown agent %q: pick auto, Copilot, an ACP agent or the demo", s.Agent)
}

// checkACPCommand: the ACP agent needs its command line. How it splits is
// session/acp's to say (cli checks it); settings imports nothing of ours.
func checkACPCommand(s Settings) *FieldError {
	if s.Agent == AgentACP && strings.TrimSpace(s.ACPCommand) == "" {
		return problem(FieldACPCommand, "--agent acp needs --acp-command CMD, such as --acp-command \"opencode acp\"",
			"Enter the ACP agent's command line, such as opencode acp")
	}
	return nil
}

func checkCopilotPath(s Settings) *FieldError {
	p := strings.TrimSpace(s.CopilotPath)
	if p == "" {
		return nil
	}
	if _, err := exec.LookPath(p); err != nil {
		return problem(FieldCopilotPath, fmt.Sprintf("--copilot-path %q is not an executable", p),
			"No Copilot CLI at %q: pick the copilot executable, or leave it empty to use copilot on PATH", p)
	}
	return nil
}

func checkProviderURL(s Settings) *FieldError {
	if s.ProviderURL == "" {
		return nil
	}
	u, err := url.Parse(strings.TrimSpace(s.ProviderURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return problem(FieldProviderURL, fmt.Sprintf("--provider-url must be an http(s) URL such as http://127.0.0.1:8080/v1, not %q", s.ProviderURL),
			"%q is not a provider URL: use http(s)://host:port/v1", s.ProviderURL)
	}
	return nil
}

func checkProviderType(s Settings) *FieldError {
	switch s.ProviderType {
	case "openai", "azure", "anthropic":
		return nil
	}
	return problem(FieldProviderType, fmt.Sprintf("--provider-type must be openai, azure or anthropic, not %q", s.ProviderType),
		"Unknown provider type %q: pick openai, azure or anthropic", s.ProviderType)
}

func checkWorkDir(s Settings) *FieldError {
	d := strings.TrimSpace(s.WorkDir)
	if d == "" {
		return nil
	}
	flag := fmt.Sprintf("--workdir %q is not a directory", d)
	fi, err := os.Stat(d)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return problem(FieldWorkDir, flag, "The folder %q does not exist", d)
	case err != nil:
		return problem(FieldWorkDir, flag, "Cannot use the folder %q: %v", d, err)
	case !fi.IsDir():
		return problem(FieldWorkDir, flag, "%q is a file, not a folder", d)
	}
	return nil
}

func checkInputTimeout(s Settings) *FieldError {
	return notNegative(FieldInputTimeout, "input-timeout", s.InputTimeout, "wait forever",
		"The input timeout must be longer than zero, or never")
}

func checkACPIdleClose(s Settings) *FieldError {
	return notNegative(FieldACPIdleClose, "acp-idle-close", s.ACPIdleClose, "never",
		"An idle session closes after a time longer than zero, or never")
}

func checkACPMaxSessions(s Settings) *FieldError {
	return notNegative(FieldACPMaxOpen, "acp-max-sessions", s.ACPMaxSessions, "no bound",
		"The open sessions are a number from 1 up, or 0 for no bound")
}

// notNegative is the check of a setting whose 0 means zero (never, no
// bound) and whose other values must be positive: flag is its name on the
// command line and window the window's words for the problem.
func notNegative[T int | time.Duration](f Field, flag string, v T, zero, window string) *FieldError {
	if v < 0 {
		return problem(f, fmt.Sprintf("--%s must be 0 (%s) or positive, not %v", flag, zero, v), "%s", window)
	}
	return nil
}

func checkBudgetCredits(s Settings) *FieldError {
	if c := s.BudgetCredits; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 || c > maxBudgetCredits {
		return problem(FieldBudgetCredits, fmt.Sprintf("--budget-credits must be a number of AI credits from 0 (no budget) to %d, not %v", maxBudgetCredits, c),
			"The budget is a number of AI credits from 0 (no budget) up, such as 50")
	}
	return nil
}

// maxBudgetCredits keeps a budget in nano AI units within an int64 with
// room to spare (about 4.6 billion credits).
const maxBudgetCredits = 1_000_000_000

// checkBudgetPeriod: the relay keeps the spend by the hour, so a shorter
// period would count an hour's spend for longer than the period itself.
// Without a budget the period is not used, and zero (settings saved before
// there was a budget) stands for the default.
func checkBudgetPeriod(s Settings) *FieldError {
	if s.BudgetPeriod == 0 && s.BudgetCredits == 0 {
		return nil
	}
	if s.BudgetPeriod < time.Hour {
		return problem(FieldBudgetPeriod, fmt.Sprintf("--budget-period must be at least 1h (such as 24h or 720h), not %v", s.BudgetPeriod),
			"The budget period must be at least an hour: 24h, 168h, 720h…")
	}
	return nil
}

// ParseNumber reads a number as the dialog accepts it: a decimal such as
// 50 or 12.5, with a comma also taken as the decimal point; empty is 0.
func ParseNumber(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseFloat(strings.Replace(s, ",", ".", 1), 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, fmt.Errorf("%q is not a number: write it like 50 or 12.5", s)
	}
	return n, nil
}

// ParseInt reads a whole number as the dialog accepts it, such as 6;
// empty is 0.
func ParseInt(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number: write it like 6", s)
	}
	return n, nil
}

// checkModel: a provider has no default model pilotdesk could rely on (the
// Copilot CLI would ask the endpoint for its own, which a local server
// rarely has), so a provider URL needs a model. A remote relay has its own
// provider: the saved one is not used then.
func checkModel(s Settings) *FieldError {
	if s.Remote || strings.TrimSpace(s.ProviderURL) == "" || strings.TrimSpace(s.Model) != "" {
		return nil
	}
	return problem(FieldModel, "--provider-url needs --model: name a model the provider serves, such as gpt-4.1",
		"Enter the model to use with the provider URL: a model the provider serves, such as gpt-4.1")
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
