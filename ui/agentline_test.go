package ui

import (
	"strings"
	"testing"
)

// TestAgentLine: the About dialog and the notice of a restarted relay name
// the agent as people know it when its backend says ("OpenCode (ACP)"),
// not the backend's flag value ("acp"); a remote relay's agent is unknown.
func TestAgentLine(t *testing.T) {
	for _, tc := range []struct {
		info aboutInfo
		want string
	}{
		{aboutInfo{Agent: "acp", Label: "OpenCode (ACP)"}, "OpenCode (ACP)"},
		{aboutInfo{Agent: "copilot"}, "GitHub Copilot CLI"},
		{aboutInfo{Agent: "script"}, "built-in demo (scripted)"},
		{aboutInfo{Label: "OpenCode (ACP)"}, "chosen by the remote relay"},
	} {
		if got := tc.info.agentLine(); got != tc.want {
			t.Errorf("%+v: agentLine() = %q, want %q", tc.info, got, tc.want)
		}
	}
	_, body := relayChangedText(Options{Agent: "acp", AgentLabel: "OpenCode (ACP)"}, "ws://127.0.0.1:1/ws", false)
	if !strings.Contains(body, "Agent: OpenCode (ACP).") {
		t.Errorf("the restarted relay's notice = %q, want it to name OpenCode (ACP)", body)
	}
}
