// Command mock-openai serves a canned OpenAI-compatible model on loopback,
// to try the Copilot agent by hand without a model or a GitHub login:
//
//	go run ./session/copilot/mockopenai/cmd/mock-openai -listen 127.0.0.1:8089 &
//	pilotdesk serve --agent copilot --provider-url http://127.0.0.1:8089/v1 --model gpt-4.1
//
// It echoes prompts word by word; "run: CMD" asks the agent to run CMD with
// its shell tool (denied in plan mode, run in act mode); "ask: QUESTION"
// makes the agent ask the user QUESTION with the choices yes and no;
// "edit: FILE: OLD => NEW" makes an agent whose edit tool is opencode's
// (edit {filePath, oldString, newString}, after a read of the file, which
// opencode requires) replace OLD by NEW in FILE, relative to the working
// directory the agent's system prompt names (scripts/acp-window.sh).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/pilotdesk/pilotdesk/session/copilot/mockopenai"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8089", "address to listen on")
	flag.Parse()
	srv, err := mockopenai.Listen(*listen, reply)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("mock model at %s (use it as --provider-url, with --model gpt-4.1)\n", srv.URL)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	<-stop
	srv.Close()
}

func reply(r *mockopenai.Request) mockopenai.Reply {
	last := r.Last()
	if strings.HasPrefix(r.Prompt(), "edit:") && r.HasTool("edit") && r.HasTool("read") {
		return editReply(r)
	}
	if last.Role == "tool" {
		return mockopenai.Reply{Text: words("The tool said: " + last.Content)}
	}
	prompt := r.Prompt()
	switch {
	case strings.HasPrefix(prompt, "run:"):
		cmd := strings.TrimSpace(strings.TrimPrefix(prompt, "run:"))
		args, _ := json.Marshal(map[string]string{"command": cmd, "description": "run what the user asked"})
		return mockopenai.Reply{
			Text:      words("Running " + cmd + "."),
			ToolCalls: []mockopenai.ToolCall{{ID: fmt.Sprintf("call_%d", len(r.Messages)), Name: "bash", Arguments: string(args)}},
		}
	case strings.HasPrefix(prompt, "ask:") && r.HasTool("ask_user"):
		q := strings.TrimSpace(strings.TrimPrefix(prompt, "ask:"))
		args, _ := json.Marshal(map[string]any{"question": q, "choices": []string{"yes", "no"}})
		return mockopenai.Reply{ToolCalls: []mockopenai.ToolCall{{ID: fmt.Sprintf("call_%d", len(r.Messages)), Name: "ask_user", Arguments: string(args)}}}
	}
	return mockopenai.Reply{Text: words("You said: " + prompt)}
}

// words streams text one word at a time.
func words(text string) []string {
	return strings.SplitAfter(text, " ")
}

// editReply plays "edit: FILE: OLD => NEW" with opencode's tools: read the
// file, edit it, then say what the tool said.
func editReply(r *mockopenai.Request) mockopenai.Reply {
	spec := strings.TrimSpace(strings.TrimPrefix(r.Prompt(), "edit:"))
	file, change, ok := strings.Cut(spec, ":")
	old, repl, ok2 := strings.Cut(change, "=>")
	if !ok || !ok2 {
		return mockopenai.Reply{Text: words("Say edit: FILE: OLD => NEW.")}
	}
	file, old, repl = strings.TrimSpace(file), strings.TrimSpace(old), strings.TrimSpace(repl)
	if !filepath.IsAbs(file) {
		file = filepath.Join(workDir(r), file)
	}
	last := r.Last()
	switch {
	case last.Role != "tool":
		args, _ := json.Marshal(map[string]string{"filePath": file})
		return mockopenai.Reply{
			Text:      words("Reading " + filepath.Base(file) + " first."),
			ToolCalls: []mockopenai.ToolCall{{ID: fmt.Sprintf("read_%d", len(r.Messages)), Name: "read", Arguments: string(args)}},
		}
	case strings.HasPrefix(last.ToolCallID, "read_"):
		args, _ := json.Marshal(map[string]string{"filePath": file, "oldString": old, "newString": repl})
		return mockopenai.Reply{
			Text:      words("Now replacing " + old + " with " + repl + "."),
			ToolCalls: []mockopenai.ToolCall{{ID: fmt.Sprintf("edit_%d", len(r.Messages)), Name: "edit", Arguments: string(args)}},
		}
	}
	return mockopenai.Reply{Text: words("Done: the edit tool said: " + last.Content)}
}

// workDir is the working directory an agent's system prompt names
// ("Working directory: DIR", as opencode's does), else the mock's own.
func workDir(r *mockopenai.Request) string {
	for _, m := range r.Messages {
		if m.Role != "system" {
			continue
		}
		for line := range strings.Lines(m.Content) {
			if dir, ok := strings.CutPrefix(strings.TrimSpace(line), "Working directory:"); ok {
				return strings.TrimSpace(dir)
			}
		}
	}
	dir, _ := os.Getwd()
	return dir
}
