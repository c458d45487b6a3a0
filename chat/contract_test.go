package chat

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// contract is the part of conversation/testdata/NAME.want.json (the
// contract of a recorded stream, conversation.Contract) the terminal
// prints.
type contract struct {
	Now  string `json:"now"`
	Turn string `json:"turn"`
	Rows []struct {
		Kind   string `json:"kind"`
		Text   string `json:"text"`
		Title  string `json:"title"`
		State  string `json:"state"`
		Detail string `json:"detail"`
	} `json:"rows"`
	Messages map[string]string `json:"messages"`
}

// terminalWordsItsOwn are the contract's rows the terminal says in words
// of its own, or not at all, by kind: the test names them rather than
// failing on them.
var terminalWordsItsOwn = map[string]string{
	"plancard":  "the plan is printed as a numbered list for /run, in the terminal's words",
	"agentplan": "the agent's plan is printed step by step (agentrows.go)",
	"reasoning": "the agent's reasoning is printed dimmed as it comes, run by run",
	"text":      "checked by the message's words",
}

// TestRecordedStreams: the terminal prints each recorded stream
// (conversation/testdata) with the words of its contract, the ones the
// window and the web client show too: the prompt, the assistant's text,
// each tool call and how it ended, the notes, how the turn ended (a
// completed turn says it with its usage line) and the turn's usage line.
func TestRecordedStreams(t *testing.T) {
	streams, err := filepath.Glob(filepath.Join("..", "conversation", "testdata", "*.jsonl"))
	if err != nil || len(streams) == 0 {
		t.Fatalf("no recorded streams: %v", err)
	}
	for _, stream := range streams {
		name := strings.TrimSuffix(filepath.Base(stream), ".jsonl")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(strings.TrimSuffix(stream, ".jsonl") + ".want.json")
			if err != nil {
				t.Fatalf("no contract: %v", err)
			}
			var want contract
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			now, err := time.Parse(time.RFC3339, want.Now)
			if err != nil {
				t.Fatalf("the contract's now %q: %v", want.Now, err)
			}
			h := startREPL(t, Terminal{}, func(c *Config) { c.Now = func() time.Time { return now } })
			h.subscribed(map[string]any{"streaming": true})
			f, err := os.Open(stream)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			last := ""
			for sc.Scan() {
				var frame struct {
					Type string         `json:"type"`
					Data map[string]any `json:"data"`
				}
				if err := json.Unmarshal(sc.Bytes(), &frame); err != nil {
					t.Fatal(err)
				}
				frame.Data["conversationId"] = h.conv
				h.emit(frame.Type, frame.Data)
				last = frame.Type
			}
			// A line the REPL prints once it has handled everything before.
			h.emit(protocol.TypeError, map[string]any{"conversationId": "", "code": "contract-end", "message": "end"})
			h.waitFor("contract-end")
			out := h.out.text()
			says := func(what, words string) {
				t.Helper()
				if !strings.Contains(out, words) {
					t.Errorf("%s: the terminal never printed %q:\n%s", what, words, out)
				}
			}
			errorShown := false
			for i, row := range want.Rows {
				switch row.Kind {
				case "user":
					says("the prompt", oneLine(row.Text))
				case "tool":
					says("a tool call", row.Title+" "+row.Text)
					says("a tool call's end", map[string]string{"approved": "approved", "denied": "denied by plan", "failed": "failed", "stopped": "stopped with the turn"}[row.State])
				case "note":
					if strings.HasPrefix(row.Text, "Agent error: ") {
						errorShown = true
					}
					says("a note", row.Text) // a question closed elsewhere too
				case "mode":
					says("a mode switch", row.Text)
				case "changes":
					says("a turn's changes", row.Text) // its files: /diff N
				case "restored":
					says("a restore", row.Text)
					for line := range strings.SplitSeq(row.Detail, "\n") {
						says("a file the restore wrote", line)
					}
				case "status":
					switch {
					case row.State == protocol.StatusCompleted:
					case row.State == protocol.StatusError && row.Detail != "":
						if !errorShown {
							says("the turn's end", "Agent error: "+row.Detail) // said when it came
						}
					default:
						says("the turn's end", row.Text)
					}
				default:
					if why, ok := terminalWordsItsOwn[row.Kind]; ok {
						t.Logf("row %d, %s: %s", i, row.Kind, why)
						continue
					}
					t.Errorf("row %d: the terminal does not know rows of kind %q", i, row.Kind)
				}
			}
			for id, text := range want.Messages {
				// Printed as it streams, a tool call's line where it came.
				for line := range strings.SplitSeq(text, "\n") {
					says("message "+id, line)
				}
			}
			if last == protocol.TypeIdle {
				says("the turn's usage", want.Turn)
			} else {
				t.Logf("the stream goes on after its last turn's end (%s): the usage line printed at the end has less than the contract's", last)
			}
		})
	}
}
