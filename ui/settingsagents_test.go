package ui

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/pilotdesk/pilotdesk/settings"
)

// TestSettingsAgentsFound: the dialog names the agents found on PATH under
// the agent, offers the ACP ones as presets of the ACP agent's command
// line, and picking one selects "An ACP agent"; Apply saves both and
// restarts the relay with them.
func TestSettingsAgentsFound(t *testing.T) {
	bin := t.TempDir()
	for _, prog := range []string{"opencode", "goose"} {
		if err := os.WriteFile(filepath.Join(bin, prog), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	var restarts int
	h := newHarness(t, harnessConfig{options: Options{Restart: func(done func(error)) { restarts++; done(nil) }}})

	h.w.ShowSettings()
	d := h.w.settings
	if got := d.items[settings.FieldAgent].HintText; got != "On PATH: opencode, goose" {
		t.Errorf("agent hint %q", got)
	}
	if got := d.items[settings.FieldACPCommand].HintText; got != "Pick one of the 2 on PATH or type a command line" {
		t.Errorf("ACP agent hint %q", got)
	}
	cmd := d.selectEntry(settings.FieldACPCommand)
	// The presets the entry's dropdown offers.
	if want := []settings.Choice{{Value: "opencode acp", Label: "opencode"}, {Value: "goose acp", Label: "goose"}}; !reflect.DeepEqual(d.found, want) {
		t.Errorf("presets offered %v", d.found)
	}
	agent := d.selector(settings.FieldAgent)
	if agent.Selected == settings.Lookup(settings.FieldAgent).ChoiceLabel(settings.AgentACP) {
		t.Fatal("the ACP agent is picked before anything was")
	}
	cmd.SetText("my-agent --acp") // a command of one's own picks nothing
	if agent.Selected == settings.Lookup(settings.FieldAgent).ChoiceLabel(settings.AgentACP) {
		t.Error("a command typed picked the ACP agent")
	}
	cmd.SetText("goose acp")
	if agent.Selected != settings.Lookup(settings.FieldAgent).ChoiceLabel(settings.AgentACP) {
		t.Errorf("after picking goose the agent is %q", agent.Selected)
	}
	test.Tap(d.apply)
	if restarts != 1 {
		t.Fatalf("%d restarts", restarts)
	}
	if got := settings.Load(h.app.Preferences(), settings.Defaults()); got.Agent != settings.AgentACP || got.ACPCommand != "goose acp" {
		t.Errorf("saved agent %q, command %q", got.Agent, got.ACPCommand)
	}

	// Nothing installed: the hints say so.
	t.Setenv("PATH", t.TempDir())
	h.w.ShowSettings()
	d = h.w.settings
	if got := d.items[settings.FieldAgent].HintText; got != "No Copilot CLI or known ACP agent on PATH" {
		t.Errorf("agent hint with nothing installed %q", got)
	}
}

func TestAgentsHint(t *testing.T) {
	if got := agentsHint([]string{"Copilot CLI", "Claude", "Gemini", "opencode", "goose"}); got != "On PATH: Copilot CLI, Claude, Gemini and 2 more" {
		t.Errorf("%q", got)
	}
	if got := presetsHint([]settings.Choice{{Value: "goose acp", Label: "goose"}}); got != "Pick goose (on PATH) or type a command line" {
		t.Errorf("%q", got)
	}
}
