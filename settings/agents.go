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
