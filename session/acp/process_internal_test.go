package acp

import (
	"slices"
	"testing"
)

// TestAgentEnvClaudeAsRoot: run as root, claude-agent-acp gets no
// IS_SANDBOX unless it is 1 (Claude Code exits at once otherwise); other
// agents, and other users, get the environment as it is.
func TestAgentEnvClaudeAsRoot(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		return func(name string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == name {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	claude := []string{"/x/node_modules/.bin/claude-agent-acp"}
	cases := []struct {
		name      string
		argv      []string
		extra     []string
		root      bool
		relay     func(string) string
		add, gone []string
	}{
		{"root, IS_SANDBOX=yes", claude, []string{"A=1"}, true, env("IS_SANDBOX", "yes"), []string{"A=1"}, []string{"IS_SANDBOX"}},
		{"root, IS_SANDBOX=1", claude, nil, true, env("IS_SANDBOX", "1"), nil, nil},
		{"root, unset", claude, nil, true, env(), nil, nil},
		{"root, given in Env", []string{"npx", "@zed-industries/claude-agent-acp"}, []string{"IS_SANDBOX=true", "B=2"}, true, env(), []string{"B=2"}, []string{"IS_SANDBOX"}},
		{"root, Env sets 1", claude, []string{"IS_SANDBOX=1"}, true, env("IS_SANDBOX", "yes"), []string{"IS_SANDBOX=1"}, nil},
		{"not root", claude, nil, false, env("IS_SANDBOX", "yes"), nil, nil},
		{"another agent", []string{"gemini", "--acp"}, nil, true, env("IS_SANDBOX", "yes"), nil, nil},
	}
	for _, c := range cases {
		add, gone := agentEnv(c.argv, c.extra, c.root, c.relay)
		if !slices.Equal(add, c.add) || !slices.Equal(gone, c.gone) {
			t.Errorf("%s: add %q, unset %q; want %q, %q", c.name, add, gone, c.add, c.gone)
		}
	}
}
