package settings

import (
	"os/exec"
	"strings"
)

// acpPresets are the ACP agents pilotdesk knows, as the command lines that
// run them: the Presets of the ACP agent's setting. Each runs with the
// relay's environment, where it takes its model configuration from.
var acpPresets = []Choice{
	{Value: "copilot --acp", Label: "Copilot via ACP"},
	{Value: "claude-agent-acp", Label: "Claude"},
	{Value: "claude-code-acp", Label: "Claude (older adapter)"},
	{Value: "gemini --acp", Label: "Gemini"},
	{Value: "opencode acp", Label: "opencode"},
	{Value: "goose acp", Label: "goose"},
	{Value: "codex-acp", Label: "Codex"},
}

// LookPath finds a program as exec.LookPath does; tests pass their own.
type LookPath func(file string) (string, error)

func (look LookPath) orDefault() LookPath {
	if look == nil {
		return exec.LookPath
	}
	return look
}

// FoundPresets returns the setting's presets whose program (the first word
// of the command line) look finds; nil look searches PATH.
func (r Setting) FoundPresets(look LookPath) []Choice {
	look = look.orDefault()
	var out []Choice
	for _, p := range r.Presets {
		if prog, _, _ := strings.Cut(p.Value, " "); prog != "" {
			if _, err := look(prog); err == nil {
				out = append(out, p)
			}
		}
	}
	return out
}

// FoundAgents names the agents installed for s: the Copilot CLI (where
// s.CopilotPath says, else on PATH) and the ACP agents of the presets.
func FoundAgents(s Settings, look LookPath) []string {
	look = look.orDefault()
	var out []string
	copilot := strings.TrimSpace(s.CopilotPath)
	if copilot == "" {
		copilot = "copilot"
	}
	if _, err := look(copilot); err == nil {
		out = append(out, "Copilot CLI")
	}
	for _, p := range Lookup(FieldACPCommand).FoundPresets(look) {
		out = append(out, p.Label)
	}
	return out
}

// PresetLabel is the name of the preset whose command line is cmd (spaces
// around words do not count), "" for a command of the user's own.
func (r Setting) PresetLabel(cmd string) string {
	cmd = strings.Join(strings.Fields(cmd), " ")
	for _, p := range r.Presets {
		if p.Value == cmd {
			return p.Label
		}
	}
	return ""
}

// ACPProviderEnv is the environment that points the ACP agent command runs
// at the model provider of the settings (Provider URL, key and Model), for
// the agents whose provider is set by environment: Claude Code's adapters
// (an Anthropic Messages API), the Gemini CLI (a Gemini API) and
// `copilot --acp` (its bring-your-own-model variables). nil without a
// provider URL, or for an agent that takes its provider from its own
// configuration (opencode's OPENCODE_CONFIG_CONTENT, Codex's config.toml;
// docs/acp.md says how).
func ACPProviderEnv(command, url, key, model string) []string {
	url = strings.TrimSpace(url)
	prog, rest, _ := strings.Cut(strings.Join(strings.Fields(command), " "), " ")
	if url == "" {
		return nil
	}
	var base, keyVar, modelVar string
	switch {
	case prog == "claude-agent-acp" || prog == "claude-code-acp":
		// The server's root: Claude Code adds /v1/messages.
		base, keyVar, modelVar = "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL"
		url = strings.TrimSuffix(strings.TrimSuffix(url, "/"), "/v1")
	case prog == "gemini" && rest == "--acp":
		base, keyVar, modelVar = "GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY", "GEMINI_MODEL"
	case prog == "copilot" && rest == "--acp":
		base, keyVar, modelVar = "COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_API_KEY", "COPILOT_MODEL"
	default:
		return nil
	}
	env := []string{base + "=" + url}
	if key != "" {
		env = append(env, keyVar+"="+key)
	}
	if model = strings.TrimSpace(model); model != "" {
		env = append(env, modelVar+"="+model)
	}
	return env
}
