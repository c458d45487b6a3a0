package script

// The built-in demo, assets/demo.json, is generated from this file: written
// by hand it would be hundreds of word-sized delta and sleep steps. Edit the
// text here, then regenerate with
//
//	go test ./session/script/ -run TestDemoIsGenerated -update
//
// TestDemoIsGenerated fails while the committed file and this source differ.

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"regexp"
	"strings"
	"time"
)

var update = flag.Bool("update", false, "rewrite assets/demo.json from the demo source in demo_gen_test.go")

// demoPath is assets/demo.json seen from this package's directory, where
// go test runs.
const demoPath = "../../assets/demo.json"

// bt stands for a backtick, which Go raw strings cannot hold.
const bt = "ˋ"

// Stream pacing: a word every 25 ms reads as typing; a little longer after
// a sentence and at a paragraph break.
const (
	wordPause      = 25 * time.Millisecond
	sentencePause  = 80 * time.Millisecond
	paragraphPause = 160 * time.Millisecond
	codeLinePause  = 45 * time.Millisecond
)

// demoTurn builds one turn. Each line of the output holds one step, or a
// delta with the pause after it.
type demoTurn struct {
	match string // "" for the catch-all tour
	lines []string
	slept time.Duration
}

func (t *demoTurn) line(steps ...any) {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = compactJSON(s)
	}
	t.lines = append(t.lines, strings.Join(parts, ", "))
}

func (t *demoTurn) pause(d time.Duration) {
	t.slept += d
	t.line(map[string]string{"sleep": d.String()})
}

// words streams markdown prose one word (with its trailing space) per delta.
func (t *demoTurn) words(text string) {
	for _, w := range wordRE.FindAllString(strings.ReplaceAll(text, bt, "`"), -1) {
		d := wordPause
		switch trimmed := strings.TrimRight(w, " "); {
		case strings.HasSuffix(w, "\n\n"):
			d = paragraphPause
		case strings.HasSuffix(trimmed, ".") || strings.HasSuffix(trimmed, ":") || strings.HasSuffix(trimmed, "?") || strings.HasSuffix(trimmed, "!"):
			d = sentencePause
		}
		t.slept += d
		t.line(map[string]string{"delta": w}, map[string]string{"sleep": d.String()})
	}
}

var wordRE = regexp.MustCompile(`\S+\s*|\s+`)

// code streams a block line by line, as models tend to send code.
func (t *demoTurn) code(text string) {
	for _, l := range strings.SplitAfter(strings.ReplaceAll(text, bt, "`"), "\n") {
		if l == "" {
			continue
		}
		t.slept += codeLinePause
		t.line(map[string]string{"delta": l}, map[string]string{"sleep": codeLinePause.String()})
	}
}

type toolSpec struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
	Result    string         `json:"result,omitempty"`
	Write     *writeSpec     `json:"write,omitempty"`
	Run       string         `json:"run,omitempty"`
}

type writeSpec struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// writeFile is a tool call that, approved, writes the file in the
// conversation's folder.
func (t *demoTurn) writeFile(path, content, result string) {
	t.line(map[string]toolSpec{"tool": {Name: "edit", Arguments: map[string]any{"path": path, "content": content}, Result: result,
		Write: &writeSpec{Path: path, Content: content}}})
}

// runCommand is a tool call that, approved, runs the command in the
// conversation's folder; its output is the result.
func (t *demoTurn) runCommand(command string) {
	t.line(map[string]toolSpec{"tool": {Name: "bash", Arguments: map[string]any{"command": command}, Run: command}})
}

func (t *demoTurn) tool(name string, args map[string]any, result string) {
	t.line(map[string]toolSpec{"tool": {Name: name, Arguments: args, Result: result}})
}

type askSpec struct {
	Question      string   `json:"question"`
	Choices       []string `json:"choices,omitempty"`
	AllowFreeform *bool    `json:"allowFreeform,omitempty"`
}

func (t *demoTurn) ask(question string, choices []string, allowFreeform bool) {
	t.line(map[string]askSpec{"ask": {Question: question, Choices: choices, AllowFreeform: &allowFreeform}})
}

type inputSpec struct {
	Type    string   `json:"type"`
	Prompt  string   `json:"prompt"`
	Choices []string `json:"choices,omitempty"`
}

func (t *demoTurn) input(typ, prompt string, choices ...string) {
	t.line(map[string]inputSpec{"input": {Type: typ, Prompt: prompt, Choices: choices}})
}

// The usage the demo reports: one premium request of a made-up session.
type usageSpec struct {
	Model            string         `json:"model"`
	Cost             float64        `json:"cost"`
	InputTokens      int64          `json:"inputTokens"`
	OutputTokens     int64          `json:"outputTokens"`
	CacheReadTokens  int64          `json:"cacheReadTokens"`
	CacheWriteTokens int64          `json:"cacheWriteTokens"`
	QuotaSnapshots   map[string]any `json:"quotaSnapshots"`
}

type shutdownSpec struct {
	TotalPremiumRequests float64        `json:"totalPremiumRequests"`
	ModelMetrics         map[string]any `json:"modelMetrics"`
}

const demoModel = "gpt-5"

func (t *demoTurn) usage() {
	t.line(map[string]usageSpec{"usage": {
		Model: demoModel, Cost: 1,
		InputTokens: 18432, OutputTokens: 1210, CacheReadTokens: 12288, CacheWriteTokens: 2048,
		QuotaSnapshots: map[string]any{"premium_interactions": map[string]any{
			"isUnlimitedEntitlement":           false,
			"entitlementRequests":              300,
			"usedRequests":                     42,
			"usageAllowedWithExhaustedQuota":   false,
			"overage":                          0,
			"overageAllowedWithExhaustedQuota": false,
			"remainingPercentage":              86,
			"resetDate":                        "2026-12-01T00:00:00Z",
		}},
	}})
}

func (t *demoTurn) shutdown() {
	t.line(map[string]shutdownSpec{"shutdown": {
		TotalPremiumRequests: 1,
		ModelMetrics: map[string]any{demoModel: map[string]any{
			"requests": map[string]any{"count": 3, "cost": 1},
			"usage":    map[string]any{"inputTokens": 18432, "outputTokens": 1210, "cacheReadTokens": 12288, "cacheWriteTokens": 2048},
		}},
	}})
}

func (t *demoTurn) fail(message string) { t.line(map[string]string{"error": message}) }

// compactJSON marshals v on one line, leaving <, > and & as they are (code
// in the deltas reads better that way).
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("demo source: %v", err)) // a bug in this file, found by its test
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// demoTurns is the demo: one turn per feature, found by a keyword, a help
// turn listing the keywords, and the catch-all tour showing everything.
func demoTurns() []*demoTurn {
	var turns []*demoTurn
	add := func(match string, build func(t *demoTurn)) {
		t := &demoTurn{match: match}
		build(t)
		turns = append(turns, t)
	}

	add("help", func(t *demoTurn) {
		t.words(helpText)
	})

	add("markdown", func(t *demoTurn) {
		t.words(`## Markdown, streamed

Replies arrive a word at a time and render as markdown when they are whole:

- **bold**, *italic* and ˋinline codeˋ
- numbered and bulleted lists
- links, like the [GitHub Copilot CLI](https://github.com/github/copilot-cli)
- code blocks with a language tag:

`)
		t.code(markdownCode)
		t.words(`
> A quote, for good measure: *small packages with one job.*

That is all the formatting a coding agent usually needs.`)
	})

	add("tool", func(t *demoTurn) {
		t.words("## Tool calls\n\nThis conversation is in **{{mode}}** mode. Let me run the tests: ")
		t.tool("bash", map[string]any{"command": "go test ./...", "description": "Run the test suite"}, goTestOutput)
		t.words("\n\nThe ˋbashˋ call was **{{tool}}**. Now a look at the README: ")
		t.tool("view", map[string]any{"path": "README.md"}, "# demo\n\nA tiny module for the pilotdesk tour.\n")
		t.words(`

That call was **{{tool}}**. Every tool call asks the relay first, and the mode decides at that moment: **act** approves, **plan** denies. Flip the mode and send ˋtoolˋ again to see the other outcome.`)
	})

	add("plan", func(t *demoTurn) {
		t.words(`## Plan mode

In **plan** mode the agent may think and describe, but every tool call is denied, so nothing on your machine changes. The mode is **{{mode}}** now. My plan:

1. Read ˋmain.goˋ and find the slow loop.
2. Replace it with a map lookup.
3. Run the tests.

Let me start on step 2: `)
		t.tool("edit", map[string]any{"path": "main.go", "old_str": "for _, u := range users {", "new_str": "u, ok := byID[id]"}, "main.go: 1 edit applied")
		t.words(`

The edit was **{{tool}}**. In plan mode that is the point: you read the plan first. Switch to act and send ˋplanˋ again, and the same edit is approved. The switch applies to the next tool call, even in the middle of a reply.`)
	})

	add("approve", func(t *demoTurn) {
		t.words("## An approval\n\nI would like to delete the build cache. ")
		t.input("approval", "Delete the build cache (about 1.2 GB)?", "Delete it", "Keep it")
		t.words("\n\nYour answer: **{{answer}}{{error}}**. Approving lets the reply go on; rejecting cancels it on the spot, keeping what was already written.")
	})

	add("choose", func(t *demoTurn) {
		t.words("## A choice\n\nThree ways to fix the flaky test: ")
		t.input("choice", "How should I fix TestUpload?", "Retry the upload in the test", "Fake the network", "Raise the timeout")
		t.words("\n\nYou picked **{{answer}}{{error}}** (index {{index}}, counting from 0). Pick by number or with the arrow keys; Reject cancels the reply.")
	})

	add("text", func(t *demoTurn) {
		t.words("## A free-text question\n\nI need a name before I create the package. ")
		t.input("text", "What should the new package be called?")
		t.words("\n\nThe question ended with ˋ{{answer}}{{error}}ˋ: your answer, or ˋtimeoutˋ when nobody answered in time. Any non-empty text is an answer; ˋrˋ or ˋ/rejectˋ alone rejects the question and cancels the reply.")
	})

	add("ask", func(t *demoTurn) {
		t.words("## A question with suggestions\n\nAgents ask open questions too, offering a few answers while letting you write your own. ")
		t.ask("Which database should the service use?", []string{"SQLite", "PostgreSQL", "Keep it in memory"}, true)
		t.words("\n\nYou answered **{{answer}}{{error}}**. What the script saw: ")
		t.words("ˋanswer={{answer}} index={{index}} error={{error}}ˋ (the index is -1 for an answer of your own, and error says ˋtimeoutˋ when nobody answered in time).")
	})

	add("edit a file", func(t *demoTurn) {
		t.words("## Editing a file\n\nThis conversation works in ˋ{{workspace}}ˋ, the folder you chose for it, and the mode is **{{mode}}**. I will write a short note there: ")
		t.writeFile("pilotdesk-demo.md", demoNote, "wrote pilotdesk-demo.md")
		t.words("\n\nThe edit was **{{tool}}**. Now let me read it back: ")
		t.runCommand("cat pilotdesk-demo.md")
		t.words(`

That call was **{{tool}}**. In **act** mode the file is really there, in the folder of this conversation and nowhere else: open it, change it, delete it. In **plan** mode nothing was written. Each conversation has its own folder; start a new conversation to work in another one.`)
	})

	add("usage", func(t *demoTurn) {
		t.words("## Usage\n\nEvery model call reports what it used: the model, its cost in premium requests, tokens read from and written to the cache, and how much of the monthly quota is left. ")
		t.usage()
		t.words("The bar at the bottom of the window shows it. When an agent session ends, it reports its totals: ")
		t.shutdown()
		t.words("This session has ended now; send another prompt and a new one starts.")
	})

	add("slow", func(t *demoTurn) {
		t.words("## A slow reply\n\nPress **Stop** whenever you like: the reply ends at once and keeps what it wrote so far.\n\n")
		for i := 1; i <= 20; i++ {
			t.line(map[string]string{"delta": fmt.Sprintf("%d… ", i)})
			t.pause(600 * time.Millisecond)
		}
		t.words("\n\nStill here? That was the whole count.")
	})

	add("error", func(t *demoTurn) {
		t.words("Let me try something that is bound to go wrong… ")
		t.pause(400 * time.Millisecond)
		t.fail("the demo agent failed on purpose (send help for the list of demos)")
	})

	add("", func(t *demoTurn) {
		t.words(`# Welcome to pilotdesk

You wrote “{{prompt}}”. A **scripted agent** answers you: the built-in demo, with no model behind it, so you can try every part of the window without the GitHub Copilot CLI. Here they are, one after the other.

## Streaming markdown

Text streams in a word at a time and renders as markdown: **bold**, *italic*, ˋinline codeˋ, lists, [links](https://github.com/github/copilot-cli) and code:

`)
		t.code(tourCode)
		t.words("\n## Tools and modes\n\nThe conversation is in **{{mode}}** mode. Let me run the tests: ")
		t.tool("bash", map[string]any{"command": "go test ./...", "description": "Run the test suite"}, goTestOutput)
		t.words("\n\nThe tool call was **{{tool}}**. In **act** mode tools run; in **plan** mode every call is denied and the agent only describes what it would do.\n\n")
		t.words("## Questions\n\nAn agent can stop and ask. First an approval (rejecting it cancels the rest of this tour): ")
		t.input("approval", "Apply the fix to main.go?", "Apply", "Skip")
		t.words("\n\nYour answer: **{{answer}}{{error}}**. Next, a choice: ")
		t.input("choice", "Which tests next?", "Unit", "Integration", "End-to-end")
		t.words("\n\nYou picked **{{answer}}{{error}}** (index {{index}}, counting from 0). Now some free text: ")
		t.input("text", "What is your project called?")
		t.words("\n\nNoted: **{{answer}}{{error}}**. Last, a question with suggestions that also takes an answer of your own: ")
		t.ask("Which editor do you use?", []string{"VS Code", "GoLand", "Vim"}, true)
		t.words("\n\nYou said **{{answer}}{{error}}**.\n\n")
		t.words("## Usage\n\nEach model call reports its usage, and the bar at the bottom shows the model, the cost and the premium quota left. ")
		t.usage()
		t.words("When a session ends it reports its totals. ")
		t.shutdown()
		t.words("\n\nThat is the tour. Send **help** to try one part at a time.")
	})
	return turns
}

const helpText = `## What to try

This is the built-in demo: a scripted agent that plays replies instead of calling a model. Send a message containing one of these words:

- ˋmarkdownˋ: streamed, formatted text with a code block
- ˋtoolˋ: tool calls, approved or denied by the mode
- ˋplanˋ: how plan mode stops tools
- ˋapproveˋ: an approval question
- ˋchooseˋ: a numbered choice
- ˋtextˋ: a free-text question
- ˋaskˋ: a question with suggestions and room for your own answer
- ˋedit a fileˋ: writes a note into this conversation's folder (in **act** mode) and reads it back
- ˋusageˋ: a usage report and the session's totals
- ˋslowˋ: a slow reply, to try **Stop**
- ˋerrorˋ: a reply that fails
- anything else: the whole tour

The **Plan** and **Act** buttons beside the prompt box decide whether tool calls run (in the terminal client, ˋ/planˋ and ˋ/actˋ). Install the GitHub Copilot CLI to talk to a real agent, or play your own script with ˋpilotdesk --script FILEˋ.`

// demoNote is the file the edit demo writes.
const demoNote = `# A note from the pilotdesk demo

The scripted demo agent wrote this file, in the folder of the conversation
that asked it to. Delete it whenever you like.
`

const markdownCode = "```go\n" + `// Greeting returns a friendly hello.
func Greeting(name string) string {
	if name == "" {
		name = "world"
	}
	return fmt.Sprintf("Hello, %s!", name)
}
` + "```\n"

const tourCode = "```go\n" + `func main() {
	for _, n := range []string{"plan", "act"} {
		fmt.Println("mode:", n)
	}
}
` + "```\n"

const goTestOutput = `ok  	example.com/demo	0.014s
ok  	example.com/demo/internal/store	0.092s
ok  	example.com/demo/cmd/demo	0.021s`

// demoJSON renders the demo script: one step (or a delta and its pause) per
// line, so the file stays readable and diffs stay small.
func demoJSON() []byte {
	var b strings.Builder
	b.WriteString("{\n  \"turns\": [\n")
	turns := demoTurns()
	for i, t := range turns {
		b.WriteString("    {\n")
		if t.match != "" {
			fmt.Fprintf(&b, "      \"match\": %s,\n", compactJSON(t.match))
		}
		b.WriteString("      \"steps\": [\n")
		for j, l := range t.lines {
			b.WriteString("        " + l)
			if j < len(t.lines)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString("      ]\n    }")
		if i < len(turns)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("  ]\n}\n")
	return []byte(b.String())
}
