// Command mock-openai serves a canned OpenAI-compatible model on loopback,
// to try the Copilot agent by hand without a model or a GitHub login:
//
//	go run ./session/copilot/mockopenai/cmd/mock-openai -listen 127.0.0.1:8089 &
//	pilotdesk serve --agent copilot --provider-url http://127.0.0.1:8089/v1 --model gpt-4.1
//
// It echoes prompts word by word; "run: CMD" asks the agent to run CMD with
// its shell tool (denied in plan mode, run in act mode); "ask: QUESTION"
// makes the agent ask the user QUESTION with the choices yes and no.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
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
