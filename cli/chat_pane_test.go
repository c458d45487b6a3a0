package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The terminal client's tests' harness: the scripted agent's script, and a
// tmux pane to run the client in, type into and read back.

const chatTestScript = `{"turns": [
  {"match": "approve", "steps": [
    {"delta": "I will migrate the database. "},
    {"input": {"type": "approval", "prompt": "Run the migration?", "choices": ["Run it", "Skip"]}},
    {"delta": "Migrated ({{answer}})."},
    {"usage": {"model": "gpt-5", "cost": 1, "quotaSnapshots": {"premium_interactions": {"entitlementRequests": 300, "usedRequests": 12, "remainingPercentage": 96}}}},
    {"shutdown": {"totalPremiumRequests": 1, "modelMetrics": {"gpt-5": {"requests": {"count": 1, "cost": 1}}}}}
  ]},
  {"match": "immediate", "steps": [
    {"input": {"type": "approval", "prompt": "Start right away?", "choices": ["Start", "Wait"]}},
    {"delta": "Started."}
  ]},
  {"match": "choose", "steps": [
    {"delta": "Three ways to go. "},
    {"input": {"type": "choice", "prompt": "Which environment?", "choices": ["staging", "prod", "qa"]}},
    {"delta": "Deploying to {{answer}} (index {{index}})."}
  ]},
  {"match": "single", "steps": [
    {"input": {"type": "choice", "prompt": "Only one way?", "choices": ["the way"]}},
    {"delta": "Went {{answer}}."}
  ]},
  {"match": "name", "steps": [
    {"delta": "Naming time. "},
    {"input": {"type": "text", "prompt": "What should the release be called?"}},
    {"delta": "Release {{answer}}{{error}}."}
  ]},
  {"match": "free", "steps": [
    {"ask": {"question": "Which color?", "choices": ["red", "blue"], "allowFreeform": true}},
    {"delta": "Color {{answer}} (index {{index}})."}
  ]},
  {"match": "broken", "steps": [
    {"delta": "Asking badly. "},
    {"input": {"type": "choice", "prompt": "Pick from nothing?"}},
    {"delta": "Went on ({{error}})."}
  ]},
  {"match": "slow", "steps": [
    {"delta": "Step one. "},
    {"sleep": "10s"},
    {"tool": {"name": "bash", "arguments": {"command": "make deploy"}, "result": "deployed"}},
    {"delta": "The tool was {{tool}}."}
  ]},
  {"match": "deploy now", "steps": [
    {"tool": {"name": "bash", "arguments": {"command": "make deploy"}, "result": "deployed"}},
    {"delta": "The tool was {{tool}}."}
  ]},
  {"match": "markdown", "steps": [
    {"delta": "## Plan\n\nRun **go test** on "},
    {"delta": "\u0060./...\u0060:\n\n\u0060\u0060\u0060go\nfunc main() {}\n\u0060\u0060\u0060\nDone."}
  ]},
  {"steps": [{"delta": "Echo: {{prompt}}"}]}
]}`

func writeChatScript(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chat-script.json")
	if err := os.WriteFile(path, []byte(chatTestScript), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tmuxPane is a program running in its own tmux server (a private socket),
// in a pane of a fixed size.
type tmuxPane struct {
	t      *testing.T
	socket string
}

// startPane runs argv in a new tmux pane of 100×50 with env set (NAME=VALUE;
// an empty value unsets in effect, as the client reads it).
func startPane(t *testing.T, env []string, argv ...string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is required for the terminal tests: %v", err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "tmux.conf")
	// remain-on-exit keeps the pane (and its screen) after the program ends.
	if err := os.WriteFile(conf, []byte("set -g remain-on-exit on\nset -g history-limit 10000\nset -g status off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &tmuxPane{t: t, socket: filepath.Join(dir, "tmux.sock")}
	args := []string{"-f", conf, "new-session", "-d", "-s", "chat", "-x", "100", "-y", "50"}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	args = append(args, argv...)
	p.tmux(args...)
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", p.socket, "kill-server").Run()
	})
	return p
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...)
	cmd.Env = append(os.Environ(), "TMUX=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// keys sends tmux key names (Enter, Down, C-c, …).
func (p *tmuxPane) keys(keys ...string) {
	p.t.Helper()
	p.tmux(append([]string{"send-keys", "-t", "chat"}, keys...)...)
}

// typeLine types text literally, then Enter.
func (p *tmuxPane) typeLine(text string) {
	p.t.Helper()
	if text != "" {
		p.tmux("send-keys", "-t", "chat", "-l", text)
	}
	p.keys("Enter")
}

// screen is the whole pane, its scrollback included, trailing blanks
// trimmed.
func (p *tmuxPane) screen() string {
	p.t.Helper()
	out := p.tmux("capture-pane", "-p", "-t", "chat", "-S", "-")
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return untimed(strings.TrimRight(strings.Join(lines, "\n"), "\n"))
}

// countdownLine is the countdown chat shows under an open question, to
// the relay's expiresAt; its seconds depend on the machine's pace.
var countdownLine = regexp.MustCompile(`(?m)^ *Times out in \d+:\d\d; then the agent goes on without an answer\.\n`)

// untimed leaves the countdown lines out of an output, for the tests that
// compare it exactly (chat's own tests check the countdown).
func untimed(s string) string { return countdownLine.ReplaceAllString(s, "") }

// styled is the pane with its colours as escape sequences.
func (p *tmuxPane) styled() string {
	p.t.Helper()
	return p.tmux("capture-pane", "-p", "-e", "-t", "chat", "-S", "-")
}

// waitFor waits until the screen satisfies ok (the machine may be busy:
// the deadline is generous).
func (p *tmuxPane) waitFor(what string, ok func(screen string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := p.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the terminal never showed %s; it shows:\n%s", what, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitText waits for text anywhere on the screen.
func (p *tmuxPane) waitText(text string) string {
	p.t.Helper()
	return p.waitFor(fmt.Sprintf("%q", text), func(s string) bool { return strings.Contains(s, text) })
}

// waitPrompt waits for the REPL's prompt on the last line, after text.
func (p *tmuxPane) waitPrompt(prompt string) string {
	p.t.Helper()
	return p.waitFor("the prompt "+prompt, func(s string) bool {
		lines := strings.Split(s, "\n")
		return lines[len(lines)-1] == prompt
	})
}

// waitExit waits for the program to end and returns its exit status.
func (p *tmuxPane) waitExit() string {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	pid := strings.TrimSpace(p.tmux("display-message", "-p", "-t", "chat", "#{pane_pid}"))
	for {
		// tmux marks the pane dead when its terminal closes, and knows the
		// status once it has reaped the process: wait for both.
		st := strings.Split(p.tmux("display-message", "-p", "-t", "chat", "#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}"), "|")
		if len(st) == 3 && st[0] == "1" {
			if status := strings.TrimSpace(st[1]); status != "" {
				return status
			}
			if sig := strings.TrimSpace(st[2]); sig != "" {
				return "signal " + sig
			}
		}
		// On a loaded machine tmux can leave the exited program a zombie
		// it has not reaped for a long while (seen: over 30 s), so its
		// status never shows; the kernel has it already.
		if status, ok := zombieStatus(pid); ok {
			return status
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the program did not exit; the terminal shows:\n%s", p.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// zombieStatus reads the exit status of a process that has exited but not
// been reaped, from /proc/PID/stat (field 52, exit_code, as waitpid(2)
// reports it). ok is false while the process runs (or is gone).
func zombieStatus(pid string) (status string, ok bool) {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return "", false
	}
	// The command name, in parentheses, may hold spaces: fields start
	// after its closing parenthesis, at field 3 (the state).
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return "", false
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 50 || fields[0] != "Z" {
		return "", false
	}
	code, err := strconv.Atoi(fields[49]) // field 52
	if err != nil {
		return "", false
	}
	if sig := code & 0x7f; sig != 0 {
		return "signal " + strconv.Itoa(sig), true
	}
	return strconv.Itoa(code >> 8), true
}

// inColour reports whether text appears in the foreground colour code
// (36 cyan, 31 red) in a capture-pane -e dump, which may put other SGR
// sequences (background, attributes) between the colour and the text.
func inColour(styled, code, text string) bool {
	re := regexp.MustCompile(`\x1b\[(?:[0-9;]*;)?` + code + `m(?:\x1b\[[0-9;]*m)*` + regexp.QuoteMeta(text))
	return re.MatchString(styled)
}

// after returns what s shows after the last occurrence of marker.
func after(s, marker string) string {
	if i := strings.LastIndex(s, marker); i >= 0 {
		return s[i+len(marker):]
	}
	return ""
}

var conversationLine = regexp.MustCompile(`New conversation ([0-9a-f-]{36})`)

// The environment every pane gets: no colours unless a test wants them
// (NO_COLOR empty counts as unset), no token from the test's environment.
// LANG as the Makefile sets it: Fyne, linked into the binary, complains
// about the C locale on stderr when its package starts.
var colourEnv = []string{"NO_COLOR=", "PILOTDESK_TOKEN=", "TERM=xterm-256color", "LANG=en_US.UTF-8"}
