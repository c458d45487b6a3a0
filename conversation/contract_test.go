package conversation

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

var update = flag.Bool("update", false, "rewrite testdata/*.want.json from the fold")

// Contract is what every front end's fold must make of a recorded stream
// (testdata/NAME.jsonl): testdata/NAME.want.json. The Go fold is checked
// against it here, the terminal's renderer in chat (TestRecordedStreams)
// and the web client's fold in web/unit/fold.test.mjs (scripts/web-unit.sh,
// run by make test). Its rows are what each front end shows, in order, in
// words a person reads; assistant text is one row per run of a message
// (the window cuts it into markdown blocks, the web client does not), its
// words in Messages.
type Contract struct {
	Title     string            `json:"title"`
	Mode      string            `json:"mode"`
	Streaming bool              `json:"streaming"`
	Rows      []ContractRow     `json:"rows"`
	Messages  map[string]string `json:"messages,omitempty"`
	// Usage is the usage bar's line, Totals the session's totals, Turn the
	// line under a turn's end (conversation.UsageText, TotalsText,
	// TurnText), on the clock Now (a quota's pace depends on it).
	Now    string `json:"now"`
	Usage  string `json:"usage"`
	Totals string `json:"totals,omitempty"`
	Turn   string `json:"turn"`
}

// ContractRow is one row of a Contract. Kind is user, text (a run of one
// assistant message: Message), reasoning, agentplan (the agent's own
// plan: Text its progress), tool (Title the tool, Text its summary,
// State running, approved, denied, failed or stopped, Detail its result),
// status (State the turn's status, Text its words, Detail), mode (Mode,
// Text), note (State its tone, Text), changes (a turn's changes card: Text
// its sum, Detail its files, FileChangeText a line), restored (a
// restore's notice: Text, Detail the files it wrote) or plancard (the
// denied calls of a plan turn, Text their steps).
type ContractRow struct {
	Kind    string `json:"kind"`
	Message string `json:"message,omitempty"`
	Text    string `json:"text,omitempty"`
	Title   string `json:"title,omitempty"`
	State   string `json:"state,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Mode    string `json:"mode,omitempty"`
}

// contractToolStates are the tool states of the contract, which the web
// client uses as they are.
var contractToolStates = map[string]string{ToolRunning: "running", ToolApproved: "approved", ToolDenied: "denied", ToolFailed: "failed", ToolStopped: "stopped"}

// contractOf is what the Go fold made of a stream, as a Contract.
func contractOf(st *State) Contract {
	c := Contract{Title: st.Title, Mode: string(st.Mode), Streaming: st.Streaming, Messages: map[string]string{}, Now: testNow.Format(time.RFC3339),
		Usage: UsageText(st.Usage, st.Turn, testNow), Totals: TotalsText(st.Usage), Turn: TurnText(st.Turn, st.Usage, testNow)}
	for i, r := range st.Rows {
		var row ContractRow
		switch r.Kind {
		case RowUser:
			row = ContractRow{Kind: "user", Text: r.Text, Mode: string(r.Mode)}
		case RowText, RowCode:
			if n := len(c.Rows); n > 0 && c.Rows[n-1].Kind == "text" && c.Rows[n-1].Message == r.MessageID {
				continue // the same run of the message: another markdown block
			}
			row = ContractRow{Kind: "text", Message: r.MessageID}
			c.Messages[r.MessageID] = st.MessageText(r.MessageID)
		case RowReasoning:
			row = ContractRow{Kind: "reasoning", Message: r.MessageID, Text: r.Text}
		case RowAgentPlan:
			row = ContractRow{Kind: "agentplan", Text: r.Text}
		case RowTool:
			row = ContractRow{Kind: "tool", Title: r.Title, Text: r.Text, State: contractToolStates[r.State], Detail: r.Detail}
		case RowStatus:
			row = ContractRow{Kind: "status", State: r.State, Text: r.Text, Detail: r.Detail}
		case RowMode:
			row = ContractRow{Kind: "mode", Mode: string(r.Mode), Text: r.Text}
		case RowNote:
			switch {
			case r.Changes() != nil:
				row = ContractRow{Kind: "changes", Text: r.Text, Detail: fileLines(r.Changes().Files)}
			case r.Restored() != nil:
				row = ContractRow{Kind: "restored", Text: r.Text, Detail: fileLines(r.Restored().Files)}
			default:
				row = ContractRow{Kind: "note", State: r.State, Text: r.Text}
			}
		case RowPlan:
			var steps []string
			for _, p := range st.Plan(i) {
				steps = append(steps, StepText(p))
			}
			row = ContractRow{Kind: "plancard", Text: strings.Join(steps, "\n")}
		default:
			// A row kind the contract does not say yet: the contract's
			// file shows it, and the front ends' tests fail on it until
			// it has a projection here and a view in each of them.
			row = ContractRow{Kind: fmt.Sprintf("unknown row kind %d", r.Kind), Text: r.Text}
		}
		c.Rows = append(c.Rows, row)
	}
	if len(c.Messages) == 0 {
		c.Messages = nil
	}
	return c
}

// fileLines are a change set's files, one FileChangeText a line.
func fileLines(files []protocol.ChangedFile) string {
	lines := make([]string, len(files))
	for i, f := range files {
		lines[i] = FileChangeText(f)
	}
	return strings.Join(lines, "\n")
}

// TestContract: the Go fold makes of each recorded stream exactly its
// contract (go test ./conversation -run TestContract -update writes them
// anew from the fold; review the diff). A stream without a contract fails.
func TestContract(t *testing.T) {
	t.Parallel()
	streams, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil || len(streams) == 0 {
		t.Fatalf("no recorded streams: %v", err)
	}
	for _, stream := range streams {
		name := filepath.Base(stream)
		t.Run(name, func(t *testing.T) {
			st, _ := replay(t, name)
			got, err := json.MarshalIndent(contractOf(st), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			wantFile := strings.TrimSuffix(stream, ".jsonl") + ".want.json"
			if *update {
				if err := os.WriteFile(wantFile, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatalf("%s has no contract: %v (write it with -update and review it)", name, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the fold of %s differs from %s:\n got %s\nwant %s", name, wantFile, got, want)
			}
		})
	}
}

// notInStreams are the conversation events no recorded stream needs to
// show, and why.
var notInStreams = map[string]string{
	protocol.TypeDeleted: "a deleted conversation is gone: every front end drops it rather than folding the event into its rows",
}

// TestStreamsCoverEveryEvent: every conversation event (a server message
// with a seq, stored in the history and folded) is in a recorded stream,
// so that the Go fold, the terminal and the web client are each held to a
// contract for it. A new event without one fails here, by name: add a
// stream (testdata/NAME.jsonl) that shows it, and its contract.
func TestStreamsCoverEveryEvent(t *testing.T) {
	t.Parallel()
	streams, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	for _, stream := range streams {
		raw, err := os.ReadFile(stream)
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.SplitSeq(raw, []byte("\n")) {
			var frame struct{ Type string }
			if json.Unmarshal(line, &frame) == nil {
				in[frame.Type] = true
			}
		}
	}
	events := 0
	for _, typ := range protocol.ServerTypes() {
		ev, err := protocol.DecodeEvent([]byte(`{"type":"` + typ + `","data":{"conversationId":"c","seq":1}}`))
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if _, ok := ev.Data.(protocol.Sequenced); !ok {
			continue // not a conversation event: the list, pong, errors, replies
		}
		events++
		if why, ok := notInStreams[typ]; ok {
			t.Logf("%s is in no stream: %s", typ, why)
			continue
		}
		if !in[typ] {
			t.Errorf("no recorded stream in testdata shows %s: add one, and its contract (go test ./conversation -run TestContract -update)", typ)
		}
	}
	if events < 10 {
		t.Fatalf("only %d conversation events in protocol's table: the test no longer finds them", events)
	}
}
