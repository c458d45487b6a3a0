package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// The terminal client's end-to-end tests run the real binary in a real
// terminal: a tmux pane (a pseudo-terminal with a screen tmux keeps), typed
// into with send-keys and read back with capture-pane, against a relay with
// the scripted agent and the script below. They go through the rules of
// docs/cli.md, Answering questions, one by one.

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

func TestChatInTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it in tmux")
	}
	bin := pilotdeskBinary(t)
	scriptPath := writeChatScript(t)
	const token = "chat-test-token"
	_, addr, serveLog := startServe(t, "--listen", "127.0.0.1:0", "--agent", "script", "--script", scriptPath,
		"--data-dir", memoryDataDir, "--token", token)
	wsURL := "ws://" + addr + "/ws"
	remote := func(t *testing.T, env []string, extra ...string) *tmuxPane {
		t.Helper()
		p := startPane(t, env, append([]string{bin, "chat", "--connect", wsURL, "--token", token}, extra...)...)
		p.waitPrompt("act>")
		return p
	}
	defer func() {
		if t.Failed() {
			t.Logf("relay log:\n%s", serveLog.String())
		}
	}()

	// Approval: the approval prompt, its colours, a/1 and
	// r/2, a hint for anything else and for a bare Enter. The embedded
	// relay (no --connect) with the same script.
	t.Run("approval on the embedded relay", func(t *testing.T) {
		p := startPane(t, colourEnv, bin, "chat", "--agent", "script", "--script", scriptPath, "--data-dir", memoryDataDir)
		p.waitText("pilotdesk chat · embedded relay, script agent")
		p.waitPrompt("act>")
		p.typeLine("approve the migration")
		s := p.waitPrompt("›")
		want := "act> approve the migration\nI will migrate the database.\nRun the migration?\n  a/1) Run it\n  r/2) Skip\n›"
		if !strings.HasSuffix(s, want) {
			t.Fatalf("the approval (live text finished first, then the prompt):\n%s\nwant the end:\n%s", s, want)
		}
		styled := p.styled()
		if !inColour(styled, "36", "Run it") {
			t.Errorf("the approve label is not in the info colour (cyan):\n%q", after(styled, "Run the migration?"))
		}
		if !inColour(styled, "31", "Skip") {
			t.Errorf("the reject label is not in the error colour (red):\n%q", after(styled, "Run the migration?"))
		}
		p.typeLine("maybe")
		p.waitFor("the hint", func(s string) bool { return strings.HasSuffix(s, "  r/2) Skip\nPlease answer a/1 or r/2.\n›") })
		p.typeLine("")
		p.waitFor("the hint after Enter", func(s string) bool { return strings.HasSuffix(s, "Please answer a/1 or r/2.\n›") })
		p.typeLine("a")
		s = p.waitPrompt("act>")
		want = "› Run it\nMigrated (approve).\nusage: gpt-5 · cost 1 · 12 of 300 premium requests used, 96% left · session ended: 1 premium request\n\nact>"
		if !strings.HasSuffix(s, want) {
			t.Errorf("after approving:\n%s\nwant the end:\n%s", s, want)
		}
		// 1 approves too; 2 rejects.
		p.typeLine("approve again")
		p.waitPrompt("›")
		p.typeLine("1")
		p.waitText("Migrated (approve).\nusage")
		p.waitPrompt("act>")
		p.typeLine("approve once more")
		p.waitPrompt("›")
		p.typeLine("2")
		s = p.waitPrompt("act>")
		if !strings.HasSuffix(s, "I will migrate the database.\nRun the migration?\n  a/1) Run it\n  r/2) Skip\n› Skip\nRejected. Agent response cancelled.\nusage: none reported for this turn\n\nact>") {
			t.Errorf("after rejecting with 2:\n%s", s)
		}
		// Ctrl+D quits.
		p.keys("C-d")
		if st := p.waitExit(); st != "0" {
			t.Errorf("exit status %s after Ctrl+D", st)
		}
	})

	// Choice: the numbered list, arrows (nothing highlighted first,
	// Down the first, Up the last, Enter picks), the range hint, r.
	t.Run("choice with arrows", func(t *testing.T) {
		p := remote(t, colourEnv)
		p.waitText("pilotdesk chat · relay " + addr)
		p.typeLine("choose an environment")
		s := p.waitPrompt("›")
		want := "Three ways to go.\nWhich environment?\n  1) staging\n  2) prod\n  3) qa\n  r) Reject\n›"
		if !strings.HasSuffix(s, want) {
			t.Fatalf("the list:\n%s\nwant the end:\n%s", s, want)
		}
		styled := p.styled()
		for _, n := range []string{"1)", "2)", "3)"} {
			if !inColour(styled, "36", n) {
				t.Errorf("the number %s is not in the info colour:\n%q", n, after(styled, "Which environment?"))
			}
		}
		p.typeLine("")
		p.waitFor("the hint after a bare Enter", func(s string) bool { return strings.HasSuffix(s, "  r) Reject\nPlease choose: 1-3 or r.\n›") })
		p.keys("Down")
		p.waitFor("the pointer on the first item", func(s string) bool {
			return strings.Contains(after(s, "Which environment?"), "❯ 1) staging\n  2) prod\n  3) qa\n")
		})
		p.keys("Up")
		p.waitFor("the pointer wrapped to the last item", func(s string) bool {
			return strings.Contains(after(s, "Which environment?"), "  1) staging\n  2) prod\n❯ 3) qa\n")
		})
		p.keys("Up")
		p.waitFor("the pointer on the second item", func(s string) bool {
			return strings.Contains(after(s, "Which environment?"), "❯ 2) prod\n")
		})
		p.keys("Enter")
		s = p.waitPrompt("act>")
		if !strings.Contains(s, "❯ 2) prod\n  3) qa\n  r) Reject\n› prod\nDeploying to prod (index 1).\n") {
			t.Errorf("after Enter on the pointer:\n%s", s)
		}
		// Up from nothing highlights the last; a typed number picks directly.
		p.typeLine("choose again")
		p.waitPrompt("›")
		p.keys("Up")
		p.waitFor("the pointer on the last item", func(s string) bool { return strings.Contains(after(s, "choose again"), "❯ 3) qa") })
		p.typeLine("4")
		p.waitFor("the range hint", func(s string) bool {
			return strings.HasSuffix(s, "  r) Reject\n4 is not on the list. Please choose 1-3 or r.\n›")
		})
		p.typeLine("staging")
		// The whole hint: "4 is not on the list. Please choose 1-3 or r."
		// ends the same way.
		p.waitFor("the hint for words", func(s string) bool { return strings.HasSuffix(s, "  r) Reject\nPlease choose 1-3 or r.\n›") })
		p.typeLine("1")
		p.waitText("Deploying to staging (index 0).")
		p.waitPrompt("act>")
		// Edge case 3: a single choice is still a numbered list with Reject;
		// then a rejection with no text before it.
		p.typeLine("single")
		s = p.waitPrompt("›")
		if !strings.HasSuffix(s, "act> single\nOnly one way?\n  1) the way\n  r) Reject\n›") {
			t.Errorf("the single choice:\n%s", s)
		}
		p.typeLine("2")
		p.waitFor("the single range hint", func(s string) bool { return strings.HasSuffix(s, "2 is not on the list. Please choose 1 or r.\n›") })
		p.typeLine("r")
		s = p.waitPrompt("act>")
		if !strings.HasSuffix(s, "act> single\nOnly one way?\n  1) the way\n  r) Reject\n› Reject\nRejected. Agent response cancelled.\nusage: none reported for this turn\n\nact>") {
			t.Errorf("a rejection with no text before it:\n%s", s)
		}
	})

	// Text: text input, the ? glyph in the info colour, the hint
	// that r or /reject rejects, empty input re-prompts.
	t.Run("text", func(t *testing.T) {
		p := remote(t, colourEnv)
		p.typeLine("name the release")
		s := p.waitPrompt("?")
		if !strings.HasSuffix(s, "Naming time.\nWhat should the release be called?\n  Type your answer, or r or /reject to reject.\n?") {
			t.Fatalf("the text prompt:\n%s", s)
		}
		if !inColour(p.styled(), "36", "?") {
			t.Errorf("the ? glyph is not in the info colour:\n%q", after(p.styled(), "called?"))
		}
		p.typeLine("")
		p.waitFor("the required hint", func(s string) bool {
			return strings.HasSuffix(s, "An answer is required: type it, or r or /reject to reject.\n?")
		})
		p.typeLine("Aurora")
		p.waitText("? Aurora\nRelease Aurora.\n")
		p.waitPrompt("act>")
		for _, reject := range []string{"r", "/reject"} {
			p.typeLine("name it again")
			p.waitPrompt("?")
			p.typeLine(reject)
			s = p.waitPrompt("act>")
			if !strings.HasSuffix(s, "Naming time.\nWhat should the release be called?\n  Type your answer, or r or /reject to reject.\n? "+reject+"\nRejected. Agent response cancelled.\nusage: none reported for this turn\n\nact>") {
				t.Errorf("rejecting with %s:\n%s", reject, s)
			}
		}
		// A free-form ask takes typed text beside the numbers.
		p.typeLine("free choice")
		s = p.waitPrompt("›")
		if !strings.HasSuffix(s, "Which color?\n  1) red\n  2) blue\n  r) Reject\n  or type your own answer\n›") {
			t.Errorf("the free-form ask:\n%s", s)
		}
		p.typeLine("green")
		p.waitText("› green\nColor green (index -1).")
		p.waitPrompt("act>")
		// A choice with no choices is an error
		// the user sees; the turn goes on.
		p.typeLine("broken")
		p.waitText("Asking badly.\nAgent error: ")
		p.waitText("Went on (invalid).")
		p.waitPrompt("act>")
	})

	// Ctrl+C during a question
	// rejects it; the partial text stays, here and in the history.
	t.Run("ctrl+c rejects and the partial text is kept", func(t *testing.T) {
		p := remote(t, colourEnv)
		id := conversationLine.FindStringSubmatch(p.screen())[1]
		p.typeLine("approve it")
		p.waitPrompt("›")
		p.keys("C-c")
		s := p.waitPrompt("act>")
		if !strings.HasSuffix(s, "act> approve it\nI will migrate the database.\nRun the migration?\n  a/1) Run it\n  r/2) Skip\n› Reject (Ctrl+C)\nRejected. Agent response cancelled.\nusage: none reported for this turn\n\nact>") {
			t.Errorf("after Ctrl+C:\n%s", s)
		}
		// Rejection with no prior content, by Ctrl+C on an approval.
		p.typeLine("immediate")
		p.waitPrompt("›")
		p.keys("C-c")
		s = p.waitPrompt("act>")
		if !strings.HasSuffix(s, "act> immediate\nStart right away?\n  a/1) Start\n  r/2) Wait\n› Reject (Ctrl+C)\nRejected. Agent response cancelled.\nusage: none reported for this turn\n\nact>") {
			t.Errorf("an immediate rejection:\n%s", s)
		}
		p.keys("C-d")
		p.waitExit()

		// The history kept both turns: resuming replays them.
		q := remote(t, colourEnv, "--conversation", id)
		s = q.screen()
		want := "Conversation " + id + "\nact> approve it\nI will migrate the database.\nRun the migration?\n  a/1) Run it\n  r/2) Skip\n  (rejected)\nRejected. Agent response cancelled.\nusage: none reported for this turn\n\n" +
			"act> immediate\nStart right away?\n  a/1) Start\n  r/2) Wait\n  (rejected)\nRejected. Agent response cancelled.\nusage: none reported for this turn\n\n── end of history: act mode, idle ──\nact>"
		if !strings.HasSuffix(s, want) {
			t.Errorf("the resumed conversation:\n%s\nwant the end:\n%s", s, want)
		}
		q.typeLine("and on")
		q.waitText("act> and on\nEcho: and on\n")
	})

	// Ctrl+C while a turn streams aborts it; /plan typed while it streams
	// denies the turn's next tool call. The slow turn's pause is the time
	// the Ctrl+C and the /plan have to reach the relay, from the test's
	// look at the screen through tmux and the chat: 10 s, as a busy
	// machine can take seconds over them.
	t.Run("ctrl+c aborts and /plan mid-stream", func(t *testing.T) {
		p := remote(t, colourEnv)
		p.typeLine("slow one")
		p.waitText("Step one.")
		p.keys("C-c")
		s := p.waitPrompt("act>")
		if !strings.HasSuffix(s, "Step one.\nStopped. The agent's response so far is kept above.\nusage: none reported for this turn\n\nact>") {
			t.Errorf("after Ctrl+C while streaming:\n%s", s)
		}
		p.typeLine("slow two")
		p.waitText("act> slow two\nStep one.")
		p.typeLine("/plan")
		p.waitText("Switched to Plan: every tool call is denied from the next tool call.")
		s = p.waitPrompt("plan>")
		want := "act> slow two\nStep one.\nact> /plan\nSwitched to Plan: every tool call is denied from the next tool call.\n⚙ bash make deploy — denied by plan mode\nThe tool was denied.\nusage: none reported for this turn\n" +
			"The plan (1 denied in Plan):\n  1) run `make deploy`\n/run carries it out in Act; /run 2 or /run 1,3 only those steps.\n\nplan>"
		if !strings.HasSuffix(s, want) {
			t.Errorf("a mid-stream /plan:\n%s\nwant the end:\n%s", s, want)
		}
		p.typeLine("/act")
		p.waitText("Switched to Act: tool calls run from the next turn.")
		p.typeLine("deploy now")
		p.waitText("⚙ bash make deploy — approved → deployed\nThe tool was approved.")
		p.waitPrompt("act>")
	})

	// A question answered in another window (a second client of the relay)
	// closes the prompt here.
	t.Run("answered in another window", func(t *testing.T) {
		p := remote(t, colourEnv)
		id := conversationLine.FindStringSubmatch(p.screen())[1]
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		window, err := client.Config{URL: wsURL, Token: token, Kind: protocol.ClientWindow}.Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer window.Close()
		if err := window.Subscribe(ctx, id, 0); err != nil {
			t.Fatal(err)
		}
		p.typeLine("choose for me")
		p.waitPrompt("›")
		p.keys("Down") // the user has started to answer here
		p.waitText("❯ 1) staging")
		var req *protocol.UserInputRequest
		timeout := time.After(30 * time.Second)
		for req == nil {
			select {
			case ev := <-window.Events():
				if d, ok := ev.Data.(*protocol.UserInputRequest); ok {
					req = d
				}
				if d, ok := ev.Data.(*protocol.Subscribed); ok && d.PendingInput != nil {
					req = d.PendingInput
				}
			case <-timeout:
				t.Fatal("the window never saw the question")
			}
		}
		// A second terminal joining the conversation now shows the open
		// question once, as its prompt.
		q := startPane(t, colourEnv, bin, "chat", "--connect", wsURL, "--token", token, "--conversation", id)
		qs := q.waitPrompt("›")
		if !strings.HasSuffix(qs, "── end of history: act mode, a turn is running ──\nWhich environment?\n  1) staging\n  2) prod\n  3) qa\n  r) Reject\n›") ||
			strings.Count(qs, "Which environment?") != 1 {
			t.Errorf("the joining terminal:\n%s", qs)
		}
		i := 2
		if err := window.Answer(ctx, id, req.RequestID, "qa", false, &i); err != nil {
			t.Fatal(err)
		}
		qs = q.waitPrompt("act>")
		if !strings.HasSuffix(qs, "Which environment?\n\"Which environment?\" was answered from a window on this device.\nDeploying to qa (index 2).\nusage: none reported for this turn\n\nact>") {
			t.Errorf("the joining terminal after the window answered:\n%s", qs)
		}
		s := p.waitPrompt("act>")
		if !strings.HasSuffix(s, "Which environment?\n\"Which environment?\" was answered from a window on this device.\nDeploying to qa (index 2).\nusage: none reported for this turn\n\nact>") {
			t.Errorf("after the window answered:\n%s", s)
		}
		if strings.Contains(after(s, "Which environment?"), "staging") {
			t.Errorf("the closed list stayed on the screen:\n%s", s)
		}
	})

	// A question nobody answers in time closes here with a note, and the
	// agent goes on without an answer (the embedded relay's --input-timeout).
	t.Run("timeout", func(t *testing.T) {
		p := startPane(t, colourEnv, bin, "chat", "--agent", "script", "--script", scriptPath, "--data-dir", memoryDataDir, "--input-timeout", "1s")
		p.waitPrompt("act>")
		p.typeLine("name it")
		// The question, not its "?" prompt: the prompt is there for the
		// second of --input-timeout only, which a busy machine can let
		// pass between two looks at the screen; the question stays.
		p.waitText("What should the release be called?")
		s := p.waitPrompt("act>")
		if !strings.HasSuffix(s, "What should the release be called?\n  Type your answer, or r or /reject to reject.\nNo answer in time: the question \"What should the release be called?\" timed out and the agent goes on\n without an answer.\nRelease timeout.\nusage: none reported for this turn\n\nact>") {
			t.Errorf("after the timeout:\n%s", s)
		}
	})

	// An agent's markdown is rendered on a colour terminal (docs/cli.md,
	// Markdown): no markup left, the heading bold, the Go code highlighted.
	t.Run("markdown", func(t *testing.T) {
		p := remote(t, colourEnv)
		p.typeLine("markdown")
		// The prompt is on the last line before the reply too: the turn's
		// end first.
		p.waitText("usage: none reported for this turn")
		s := p.waitPrompt("act>")
		if want := "act> markdown\nPlan\n\nRun go test on ./...:\n\n  func main() {}\n\nDone.\nusage: none reported for this turn\n\nact>"; !strings.HasSuffix(s, want) {
			t.Errorf("the reply:\n%s\nwant the end:\n%s", s, want)
		}
		styled := p.styled()
		for _, re := range []string{`\x1b\[(?:[0-9;]*;)?1mPlan`, `\x1b\[(?:[0-9;]*;)?1mgo test`, `\x1b\[(?:[0-9;]*;)?35mfunc`} {
			if !regexp.MustCompile(re).MatchString(styled) {
				t.Errorf("the reply lacks the style %s:\n%q", re, styled)
			}
		}
	})

	// NO_COLOR: no colours, no spinner; the prompts still work.
	t.Run("NO_COLOR", func(t *testing.T) {
		p := remote(t, []string{"NO_COLOR=1", "PILOTDESK_TOKEN=", "TERM=xterm-256color", "LANG=en_US.UTF-8"})
		p.typeLine("choose")
		p.waitPrompt("›")
		p.keys("Down")
		p.waitText("❯ 1) staging")
		p.keys("Enter")
		p.waitText("Deploying to staging (index 0).")
		p.waitPrompt("act>")
		if regexp.MustCompile(`\x1b\[[0-9;]*m`).FindString(strings.ReplaceAll(p.styled(), "\x1b[0m", "")) != "" {
			t.Errorf("colours with NO_COLOR set:\n%q", p.styled())
		}
	})
}

// TestChatPiped: with stdin and stdout pipes (scripted use) the chat reads
// lines, answers questions with the lines typed ahead, prints plain lines
// and ends with the input.
func TestChatPiped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := pilotdeskBinary(t)
	scriptPath := writeChatScript(t)
	cmd := exec.Command(bin, "chat", "--agent", "script", "--script", scriptPath, "--data-dir", memoryDataDir)
	cmd.Env = append(os.Environ(), "PILOTDESK_TOKEN=", "NO_COLOR=", "LANG=en_US.UTF-8")
	cmd.Stdin = strings.NewReader("approve\nx\na\nchoose\n9\n3\nname\n\nAurora\nhello\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("chat: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("chat did not end with its input\nstdout:\n%s", stdout.String())
	}
	out := untimed(stdout.String())
	if strings.Contains(out, "\x1b") {
		t.Errorf("escape sequences in piped output:\n%q", out)
	}
	for _, want := range []string{
		"act> approve\nI will migrate the database. \nRun the migration?\n  a/1) Run it\n  r/2) Skip\n› x\nPlease answer a/1 or r/2.\n› a\nMigrated (approve).\n",
		"act> choose\nThree ways to go. \nWhich environment?\n  1) staging\n  2) prod\n  3) qa\n  r) Reject\n› 9\n9 is not on the list. Please choose 1-3 or r.\n› 3\nDeploying to qa (index 2).\n",
		"act> name\nNaming time. \nWhat should the release be called?\n  Type your answer, or r or /reject to reject.\n? \nAn answer is required: type it, or r or /reject to reject.\n? Aurora\nRelease Aurora.\n",
		"act> hello\nEcho: hello\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks:\n%s\nit is:\n%s", want, out)
		}
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

func TestChatRefusesBadInvocations(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad conversation id", []string{"chat", "--conversation", "nope"}, 2, `--conversation must be a conversation ID`},
		{"bad connect url", []string{"chat", "--connect", "http//x"}, 2, "--connect must be a ws:// or wss:// URL"},
		{"positional argument", []string{"chat", "hello"}, 2, `unexpected argument "hello"`},
		{"unreachable relay", []string{"chat", "--connect", "ws://127.0.0.1:1/ws"}, 1, "connect to ws://127.0.0.1:1/ws"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, context.Background(), tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.want)
			}
		})
	}
	code, stdout, _ := runCLI(t, context.Background(), "chat", "-h")
	if code != 0 || !strings.Contains(stdout, "-conversation") || !strings.Contains(stdout, "-connect") || !strings.Contains(stdout, "-log-file") {
		t.Errorf("chat -h = %d:\n%s", code, stdout)
	}
}

// TestChatInProcess runs the command with buffers for stdin and stdout
// (plain lines), on the embedded relay: the wiring without a terminal.
func TestChatInProcess(t *testing.T) {
	scriptPath := writeChatScript(t)
	var stdout, stderr bytes.Buffer
	env := Env{
		Stdin:  strings.NewReader("hello\n/quit\n"),
		Stdout: &stdout,
		Stderr: &stderr,
		Getenv: func(string) string { return "" },
	}
	code := Run(context.Background(), []string{"chat", "--agent", "script", "--script", scriptPath, "--data-dir", memoryDataDir}, env)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "act> hello\nEcho: hello\n") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}

// TestChatLogs: the embedded relay's warnings show in the chat as "log:"
// lines; with --log-file they go to the file instead, info lines too.
func TestChatLogs(t *testing.T) {
	scriptPath := writeChatScript(t)
	run := func(extra ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		env := Env{Stdin: strings.NewReader("broken\n"), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
		args := append([]string{"chat", "--agent", "script", "--script", scriptPath, "--data-dir", memoryDataDir}, extra...)
		if code := Run(context.Background(), args, env); code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
		}
		if !strings.Contains(stdout.String(), "Went on (invalid).") {
			t.Errorf("stdout:\n%s", stdout.String())
		}
		return stdout.String()
	}
	out := run()
	if !strings.Contains(out, "log: level=WARN") || !strings.Contains(out, "a choice request needs choices") {
		t.Errorf("the relay's warning is not in the chat:\n%s", out)
	}
	logPath := filepath.Join(t.TempDir(), "chat.log")
	out = run("--log-file", logPath)
	if strings.Contains(out, "log:") {
		t.Errorf("log lines in the chat with --log-file:\n%s", out)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "a choice request needs choices") {
		t.Errorf("the log file lacks the warning:\n%s", b)
	}
}
