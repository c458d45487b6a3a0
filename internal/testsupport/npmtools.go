package testsupport

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// NPMTool is a CLI that a script installs from npm below the repository's
// .tools directory, for the end-to-end tests; an environment variable
// overrides where it is.
type NPMTool struct {
	Name   string // as the skip messages name it: "the real Copilot CLI"
	EnvVar string // the variable with its path: "PILOTDESK_COPILOT_PATH"
	Script string // what installs it: "scripts/install-copilot.sh"
	Path   string // where Script puts it, below the repository's root
}

// npmTool is the tool that scripts/install-<dir>.sh installs, as every
// npm install script does (scripts/install-npm-tool.sh), below .tools/<dir>;
// bin is its executable there, below node_modules.
func npmTool(name, envVar, dir, bin string) NPMTool {
	return NPMTool{Name: name, EnvVar: envVar,
		Script: "scripts/install-" + dir + ".sh", Path: ".tools/" + dir + "/node_modules/" + bin}
}

// The agents the end-to-end tests run.
var (
	// CopilotCLI is the npm loader of the Copilot CLI (npm-loader.js),
	// which runs with node.
	CopilotCLI = npmTool("the real Copilot CLI", "PILOTDESK_COPILOT_PATH", "copilot", "@github/copilot/npm-loader.js")
	// Opencode is opencode's executable.
	Opencode = npmTool("opencode", "PILOTDESK_OPENCODE_PATH", "opencode", ".bin/opencode")
	// ClaudeACP is Claude Code's ACP adapter, claude-agent-acp.
	ClaudeACP = npmTool("claude-agent-acp", "PILOTDESK_CLAUDE_ACP_PATH", "claude-acp", ".bin/claude-agent-acp")
	// GeminiCLI is the Gemini CLI's executable (`gemini --acp`).
	GeminiCLI = npmTool("the Gemini CLI", "PILOTDESK_GEMINI_PATH", "gemini-cli", ".bin/gemini")
	// CodexACP is Codex's ACP adapter, codex-acp.
	CodexACP = npmTool("codex-acp", "PILOTDESK_CODEX_ACP_PATH", "codex-acp", ".bin/codex-acp")
)

// Find returns the tool's path: EnvVar's value (a name without a slash is
// looked up on PATH), else Path below the repository's root. It skips the
// test, saying why, when the tool is not there.
func (tool NPMTool) Find(t testing.TB) string {
	t.Helper()
	path := os.Getenv(tool.EnvVar)
	if path == "" {
		root, err := RepoRoot()
		if err != nil {
			t.Skipf("%s cannot be located: %v; set %s", tool.Name, err, tool.EnvVar)
		}
		path = filepath.Join(root, filepath.FromSlash(tool.Path))
	} else if !strings.ContainsRune(path, '/') && !strings.ContainsRune(path, filepath.Separator) {
		if found, err := exec.LookPath(path); err == nil {
			path = found
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s is not installed (%s is missing); run %s", tool.Name, path, tool.Script)
	}
	return path
}

// CopilotEnv is the environment that runs the real Copilot CLI offline in
// home, a directory of its own: its configuration and state there, no
// GitHub identity (a test's mock model is the only model there is), and
// the cache where the native binary unpacked (~235 MB) on its first run,
// shared between tests and runs: COPILOT_PKG_CACHE_HOME, else the one
// scripts/install-copilot.sh filled.
func CopilotEnv(home string) []string {
	cache := os.Getenv("COPILOT_PKG_CACHE_HOME")
	if root, err := RepoRoot(); cache == "" && err == nil {
		cache = filepath.Join(root, ".tools", "copilot", "cache")
	}
	return []string{
		"HOME=" + home,
		"COPILOT_HOME=" + filepath.Join(home, ".copilot"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".state"),
		"COPILOT_PKG_CACHE_HOME=" + cache,
		"GH_TOKEN=", "GITHUB_TOKEN=", "COPILOT_GITHUB_TOKEN=",
	}
}

// RepoRoot returns the repository's root: the nearest directory above the
// working directory (a test's: its package's) with a go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the test's directory")
		}
		dir = parent
	}
}
