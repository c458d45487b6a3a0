package relay_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// labeled is an agent that names itself for people.
type labeled struct {
	session.Agent
	label string
}

func (l labeled) Label() string { return l.label }

// The list's entries name the agent that ran the conversation's turn: the
// relay's Label when it has one, else its Name, recorded when the turn
// started; the watchers' notices and the turn's copilot:user_message too.
// A conversation that ran no turn names none.
func TestListNamesTheAgent(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*relay.Config)
		want string
	}{
		{"name", nil, "fake"},
		{"label", func(c *relay.Config) { c.Agent = labeled{c.Agent, "OpenCode (ACP)"} }, "OpenCode (ACP)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t, tc.mod)
			cl := e.dial()
			cl.Send("copilot:list", map[string]any{"watch": true})
			cl.WaitFor("copilot:conversations", nil)
			// Its notice says it is listed. makeConversations would not
			// do: its wait for the mode_changed skips a notice that comes
			// first, as it does when the relay reads the subscribe more
			// than the notices' 40 ms after the set_mode.
			cl.Send("copilot:set_mode", map[string]any{"conversationId": "no-turn-0000", "mode": "plan"})
			if n := cl.WaitFor("copilot:conversation", nil); n.Field("conversationId") != "no-turn-0000" || n.Field("agent") != nil {
				t.Errorf("notice of a conversation that ran no turn %s, want no agent", n.Raw)
			}
			cl.Send("copilot:send", map[string]any{"conversationId": "a", "prompt": "hi"})
			if um := cl.WaitFor("copilot:user_message", nil); um.Field("agent") != tc.want {
				t.Errorf("user_message %s, want agent %q", um.Raw, tc.want)
			}
			e.agent.nextTurn(t).finish(nil)
			n := cl.WaitFor("copilot:conversation", func(f relaytest.Frame) bool { return f.Field("conversationId") == "a" })
			if n.Field("agent") != tc.want {
				t.Errorf("notice %s, want agent %q", n.Raw, tc.want)
			}
			got := agents(t, listPage(t, cl, nil))
			if len(got) != 2 || got["a"] != tc.want || got["no-turn-0000"] != "" {
				t.Errorf("list agents %v, want a: %q and none for no-turn-0000", got, tc.want)
			}
		})
	}
}

// agents maps each listed conversation to its agent.
func agents(t *testing.T, page protocol.Conversations) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range page.Conversations {
		out[c.ConversationID] = c.Agent
	}
	return out
}

// A conversation keeps the agent that ran it when the relay restarts on
// the same SQLite history with another agent (the user switched agent in
// Settings): the list does not claim the new agent for it. A turn run on
// the new agent records that one, in the list, the watchers' notices and
// its copilot:user_message, and the next restart keeps it.
func TestConversationKeepsItsAgentAcrossRestarts(t *testing.T) {
	checkNoLeaks(t)
	dir := t.TempDir()
	run := func(label string, fn func(cl *relaytest.Client, agent *fakeAgent)) {
		t.Helper()
		store, err := sqlite.Open(context.Background(), dir, sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		agent := newFakeAgent()
		srv := relaytest.Start(t, relay.Config{Agent: labeled{agent, label}, Store: store})
		fn(srv.Dial(t), agent)
		srv.Close()
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
	}
	turn := func(t *testing.T, cl *relaytest.Client, agent *fakeAgent, id string) relaytest.Frame {
		t.Helper()
		cl.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "prompt of " + id})
		um := cl.WaitFor("copilot:user_message", func(f relaytest.Frame) bool { return f.Field("conversationId") == id })
		agent.nextTurn(t).finish(nil)
		cl.WaitFor("copilot:idle", func(f relaytest.Frame) bool { return f.Field("conversationId") == id })
		return um
	}

	run("Copilot CLI", func(cl *relaytest.Client, agent *fakeAgent) {
		turn(t, cl, agent, "a")
		turn(t, cl, agent, "b")
	})
	run("OpenCode (ACP)", func(cl *relaytest.Client, agent *fakeAgent) {
		if got := agents(t, listPage(t, cl, nil)); got["a"] != "Copilot CLI" || got["b"] != "Copilot CLI" {
			t.Fatalf("after a restart on another agent, the list says %v; want Copilot CLI for both", got)
		}
		cl.Send("copilot:list", map[string]any{"watch": true})
		cl.WaitFor("copilot:conversations", nil)
		if um := turn(t, cl, agent, "b"); um.Field("agent") != "OpenCode (ACP)" {
			t.Fatalf("user_message %s, want agent OpenCode (ACP)", um.Raw)
		}
		n := cl.WaitFor("copilot:conversation", func(f relaytest.Frame) bool { return f.Field("conversationId") == "b" })
		if n.Field("agent") != "OpenCode (ACP)" {
			t.Fatalf("notice %s, want the new agent", n.Raw)
		}
		// The replay shows where the agent changed: each prompt says
		// which agent ran it.
		cl.Send("copilot:subscribe", map[string]any{"conversationId": "b", "sinceSeq": 0})
		_, replay := cl.WaitForCollect("copilot:subscribed", func(f relaytest.Frame) bool { return f.Field("conversationId") == "b" })
		var ran []any
		for _, f := range replay {
			if f.Type == protocol.TypeUserMessage {
				ran = append(ran, f.Field("agent"))
			}
		}
		if len(ran) != 2 || ran[0] != "Copilot CLI" || ran[1] != "OpenCode (ACP)" {
			t.Fatalf("the replayed prompts' agents %v, want Copilot CLI then OpenCode (ACP)", ran)
		}
	})
	run("demo (scripted)", func(cl *relaytest.Client, _ *fakeAgent) {
		if got := agents(t, listPage(t, cl, nil)); got["a"] != "Copilot CLI" || got["b"] != "OpenCode (ACP)" {
			t.Fatalf("after another restart, the list says %v; want a: Copilot CLI, b: OpenCode (ACP)", got)
		}
	})
}

// In a cluster the conversation's record carries its agent: relay B,
// running another agent, lists a conversation relay A ran with A's agent
// (its watchers hear it too), not its own. On the in-memory cluster only:
// the record is the store's, which historytest checks on each store.
func TestClusterListNamesTheOwnersAgent(t *testing.T) {
	parallel(t)
	checkNoLeaks(t)
	b := memoryBackend(t)
	s := clusterScript(t)
	a := b.relayAgent(t, 0, labeled{script.New(s), "Agent A"}, jetstream.ClusterOptions{Lease: testLease})
	bb := b.relayAgent(t, 1, labeled{script.New(s), "Agent B"}, jetstream.ClusterOptions{Lease: testLease})
	ca, cb := a.srv.Dial(t), bb.srv.Dial(t)
	cb.Send("copilot:list", map[string]any{"watch": true})
	cb.WaitFor("copilot:conversations", nil)

	frames := runTurn(t, ca, "agent-x", "hello")
	if um := frames[slices.IndexFunc(frames, func(f relaytest.Frame) bool { return f.Type == protocol.TypeUserMessage })]; um.Field("agent") != "Agent A" {
		t.Fatalf("A's user_message %s, want agent Agent A", um.Raw)
	}
	cb.WaitFor("copilot:conversation", func(f relaytest.Frame) bool {
		return f.Field("conversationId") == "agent-x" && f.Field("streaming") == false && f.Field("agent") == "Agent A"
	})
	if got := agents(t, listPage(t, cb, nil)); got["agent-x"] != "Agent A" {
		t.Fatalf("B lists %v, want agent-x run by Agent A", got)
	}
}
