package settings

import (
	"errors"
	"reflect"
	"testing"
)

// lookIn finds only the programs named.
func lookIn(progs ...string) LookPath {
	return func(file string) (string, error) {
		for _, p := range progs {
			if p == file {
				return "/bin/" + file, nil
			}
		}
		return "", errors.New("not found")
	}
}

// The ACP agent's presets found are those whose program is installed; the
// agents found add the Copilot CLI, where its setting says.
func TestFoundAgents(t *testing.T) {
	acp := Lookup(FieldACPCommand)
	got := acp.FoundPresets(lookIn("opencode", "goose", "copilot"))
	want := []Choice{{"copilot --acp", "Copilot via ACP"}, {"opencode acp", "opencode"}, {"goose acp", "goose"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("presets found = %v, want %v", got, want)
	}
	if got := acp.FoundPresets(lookIn()); got != nil {
		t.Errorf("nothing installed, found %v", got)
	}
	if got := FoundAgents(Settings{}, lookIn("copilot", "codex-acp")); !reflect.DeepEqual(got, []string{"Copilot CLI", "Copilot via ACP", "Codex"}) {
		t.Errorf("agents found = %q", got)
	}
	if got := FoundAgents(Settings{CopilotPath: "/opt/copilot"}, lookIn("/opt/copilot")); !reflect.DeepEqual(got, []string{"Copilot CLI"}) {
		t.Errorf("with a Copilot path: %q", got)
	}
	if got := acp.PresetLabel("  opencode   acp "); got != "opencode" {
		t.Errorf("PresetLabel = %q", got)
	}
	if got := acp.PresetLabel("my-agent --acp"); got != "" {
		t.Errorf("a command of one's own is labelled %q", got)
	}
	// Every preset is a command line the backend can split.
	for _, p := range acp.Presets {
		if p.Label == "" || p.Value == "" {
			t.Errorf("preset %+v", p)
		}
	}
}

// TestACPProviderEnv: the provider of the settings reaches the agents that
// take it from their environment, each in its own variables.
func TestACPProviderEnv(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cmd, url string
		want     []string
	}{
		{"claude-agent-acp", "http://127.0.0.1:8080/v1/", []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:8080", "ANTHROPIC_API_KEY=k", "ANTHROPIC_MODEL=m"}},
		{"  gemini   --acp ", "http://h:1", []string{"GOOGLE_GEMINI_BASE_URL=http://h:1", "GEMINI_API_KEY=k", "GEMINI_MODEL=m"}},
		{"copilot --acp", "http://h/v1", []string{"COPILOT_PROVIDER_BASE_URL=http://h/v1", "COPILOT_PROVIDER_API_KEY=k", "COPILOT_MODEL=m"}},
		{"codex-acp", "http://h/v1", nil},
		{"opencode acp", "http://h/v1", nil},
		{"claude-agent-acp", "", nil},
	}
	for _, c := range cases {
		if got := ACPProviderEnv(c.cmd, c.url, "k", "m"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ACPProviderEnv(%q, %q) = %q, want %q", c.cmd, c.url, got, c.want)
		}
	}
	if got := ACPProviderEnv("gemini --acp", "http://h", "", ""); !reflect.DeepEqual(got, []string{"GOOGLE_GEMINI_BASE_URL=http://h"}) {
		t.Errorf("without key and model: %q", got)
	}
}
