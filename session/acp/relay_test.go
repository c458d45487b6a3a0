package acp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session/acp"
)

// TestThroughRelay drives the fake ACP agent behind the real relay, as a
// client sees it: the mode decides each permission, a crash is a
// copilot:error and an idle "error", an abort an idle "aborted", and
// copilot:close ends the ACP session.
func TestThroughRelay(t *testing.T) {
	opts, f := newFake(t)
	agent, err := acp.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last-in first-out: the relay (started below) closes its
	// sessions first, then the agent stops the process.
	t.Cleanup(func() { agent.Close() })
	// The relay chooses each conversation's folder: its default is the
	// agent's work dir, where the test looks for what the tools wrote.
	srv := relaytest.Start(t, relay.Config{Agent: agent, Logger: testsupport.Logger(t), WorkDir: f.workDir})
	cl := srv.Dial(t)
	conv := uuid.NewString()
	ofConv := func(match func(relaytest.Frame) bool) func(relaytest.Frame) bool {
		return func(fr relaytest.Frame) bool {
			return fr.Field("conversationId") == conv && (match == nil || match(fr))
		}
	}
	send := func(prompt, mode string) {
		cl.Send("copilot:send", map[string]any{"conversationId": conv, "prompt": prompt, "mode": mode})
	}
	idle := func(want string) {
		t.Helper()
		if fr := cl.WaitFor("copilot:idle", ofConv(nil)); fr.Field("status") != want {
			t.Errorf("idle = %s, want status %s", fr.Raw, want)
		}
	}

	send("tool plan.txt", "plan")
	end := cl.WaitFor("copilot:tool_end", ofConv(nil))
	if end.Field("denied") != true || end.Field("success") != false {
		t.Errorf("plan tool_end = %s", end.Raw)
	}
	idle("completed")
	send("tool act.txt", "act")
	end = cl.WaitFor("copilot:tool_end", ofConv(nil))
	if end.Field("denied") != false || end.Field("success") != true {
		t.Errorf("act tool_end = %s", end.Raw)
	}
	idle("completed")
	if _, err := os.Stat(filepath.Join(f.workDir, "plan.txt")); err == nil {
		t.Error("plan.txt exists: the plan-mode tool ran")
	}
	if _, err := os.Stat(filepath.Join(f.workDir, "act.txt")); err != nil {
		t.Errorf("the act-mode tool did not run: %v", err)
	}

	send("hang", "act")
	cl.WaitFor("copilot:delta", ofConv(func(fr relaytest.Frame) bool { return fr.Field("content") == "Thinking..." }))
	cl.Send("copilot:abort", map[string]any{"conversationId": conv})
	idle("aborted")

	send("crash", "act")
	errFrame := cl.WaitFor("copilot:error", ofConv(nil))
	if msg, _ := errFrame.Field("message").(string); !strings.Contains(msg, "exited unexpectedly") {
		t.Errorf("error = %s", errFrame.Raw)
	}
	idle("error")
	send("hello", "act")
	idle("completed")

	cl.Send("copilot:close", map[string]any{"conversationId": conv})
	cl.WaitFor("copilot:shutdown", ofConv(nil))
	if n := len(f.find("session/close")); n != 1 {
		t.Errorf("session/close sent %d times", n)
	}
}
