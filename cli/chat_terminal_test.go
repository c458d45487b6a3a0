package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// The terminal client's end-to-end tests run the real binary in a real
// terminal: a tmux pane (a pseudo-terminal with a screen tmux keeps), typed
// into with send-keys and read back with capture-pane, against a relay with
// the scripted agent and its script (chatTestScript, with the pane, in
// chat_pane_test.go). They go through the rules of docs/cli.md, Answering
// questions, one by one.

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
		want := "act> slow two\nStep one.\nact> /plan\nSwitched to Plan: every tool call is denied from the next tool call.\n⚙ bash make deploy — denied by plan\nThe tool was denied.\nusage: none reported for this turn\n" +
			"The plan (1 denied in Plan):\n  1) run `make deploy`\n/run carries it out in Act.\n\nplan>"
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
