// Command mock-model serves the mock model of internal/mockmodel on a
// loopback port, for scripts that drive the real window on a real agent
// offline (scripts/acp-window-agent.sh): it prints "mock model at URL" and
// serves until killed. Its script: "Write the file NAME." has the agent run
// its shell tool to write NAME.txt in its work dir; anything else is
// answered with a line of text.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/pilotdesk/pilotdesk/internal/mockmodel"
)

func main() {
	srv := mockmodel.Start(reply)
	fmt.Printf("mock model at %s (Anthropic and Gemini at this root, OpenAI Responses at /v1)\n", srv.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	srv.Close()
}

const write = "Write the file "

func reply(r *mockmodel.Request) mockmodel.Reply {
	if len(r.Tools) == 0 {
		return mockmodel.Reply{Text: []string{"A title"}}
	}
	if _, ok := r.ToolResult(); ok {
		return mockmodel.Reply{Text: []string{"Done: ", "the file is written."}}
	}
	user := r.LastUser()
	i := strings.Index(user, write)
	if i < 0 {
		return mockmodel.Reply{Text: []string{"Hello ", "from the mock model."}}
	}
	name := strings.Fields(strings.TrimSuffix(strings.TrimSpace(user[i+len(write):]), "."))
	if len(name) == 0 {
		return mockmodel.Reply{Text: []string{"Which file?"}}
	}
	file := strings.TrimSuffix(name[0], ".") + ".txt"
	return mockmodel.Reply{Text: []string{"Writing ", file + "."}, ToolCall: shell(r, "echo written > "+file)}
}

// shell is the agent's shell tool: Claude's Bash, the Gemini CLI's
// run_shell_command, Codex's shell_command (or exec_command, or shell).
func shell(r *mockmodel.Request, command string) *mockmodel.ToolCall {
	switch {
	case r.API == "anthropic":
		return &mockmodel.ToolCall{Name: "Bash", Args: map[string]any{"command": command, "description": "Write a file"}}
	case r.API == "gemini":
		return &mockmodel.ToolCall{Name: "run_shell_command", Args: map[string]any{"command": command, "description": "Write a file"}}
	case r.HasTool("shell_command"):
		return &mockmodel.ToolCall{Name: "shell_command", Args: map[string]any{"command": command}}
	case r.HasTool("exec_command"):
		return &mockmodel.ToolCall{Name: "exec_command", Args: map[string]any{"cmd": command}}
	}
	return &mockmodel.ToolCall{Name: "shell", Args: map[string]any{"command": []string{"bash", "-lc", command}}}
}
