package conversation

import (
	"testing"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// Each prompt names the agent that ran its turn; where it differs from the
// one before, the transcript has a note, just before the prompt, and the
// conversation's agent is the latest. A prompt that names no agent
// (history stored before relays said) notes nothing and forgets nothing,
// and a replay from scratch starts without a previous agent.
func TestAgentChangeNote(t *testing.T) {
	st := New("c", Options{})
	seq := int64(0)
	prompt := func(id, agent string) {
		seq++
		st.Apply(ev(protocol.TypeUserMessage, &protocol.UserMessage{Header: protocol.Header{ConversationID: "c", Seq: seq},
			MessageID: id, Content: "prompt " + id, Mode: protocol.ModeAct, Agent: agent}))
		seq++
		st.Apply(ev(protocol.TypeIdle, &protocol.Idle{Header: protocol.Header{ConversationID: "c", Seq: seq}, Status: protocol.StatusCompleted}))
	}
	notes := func() []string {
		var out []string
		for i, r := range st.Rows {
			if r.Kind == RowNote {
				if i+1 >= len(st.Rows) || st.Rows[i+1].Kind != RowUser {
					t.Errorf("note %q is not just before a prompt", r.Text)
				}
				out = append(out, r.Text)
			}
		}
		return out
	}

	prompt("1", "Copilot CLI")
	prompt("2", "Copilot CLI")
	if n := notes(); len(n) != 0 || st.Agent != "Copilot CLI" {
		t.Fatalf("same agent: notes %q, agent %q", n, st.Agent)
	}
	prompt("3", "")
	prompt("4", "OpenCode (ACP)")
	prompt("5", "OpenCode (ACP)")
	prompt("6", "Copilot CLI")
	want := []string{
		"The agent changed from Copilot CLI to OpenCode (ACP).",
		"The agent changed from OpenCode (ACP) to Copilot CLI.",
	}
	if n := notes(); len(n) != 2 || n[0] != want[0] || n[1] != want[1] || st.Agent != "Copilot CLI" {
		t.Fatalf("notes %q, agent %q; want %q, Copilot CLI", n, st.Agent, want)
	}
	if kinds := kindsOf(st.Rows); kinds != "user,status,user,status,user,status,note,user,status,user,status,note,user,status" {
		t.Fatalf("rows %s", kinds)
	}

	// The relay's history started over: the first prompt replayed has
	// nothing to differ from.
	st.Apply(client.Event{Type: client.TypeReset, Data: &client.Reset{ConversationID: "c"}})
	prompt("7", "OpenCode (ACP)")
	if n := notes(); len(n) != 0 || st.Agent != "OpenCode (ACP)" {
		t.Fatalf("after a reset: notes %q, agent %q", n, st.Agent)
	}
	// The list names the agent too, but only prompts mark a change.
	st.Listed(protocol.ConversationInfo{ConversationID: "c", Agent: "demo (scripted)"})
	if n := notes(); len(n) != 0 || st.Agent != "demo (scripted)" {
		t.Fatalf("after a list entry: notes %q, agent %q", n, st.Agent)
	}
}
