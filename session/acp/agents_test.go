package acp_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/acp/internal/fakeagent"
)

// The relay's answers to what the agents people run do (docs/acp.md), each
// played by the fake agent as the real one does it; agents_e2e_test.go
// shows them against the real agents.

// notes returns pilotdesk's notes among the events.
func notes(events []session.Event) []string {
	var out []string
	for _, m := range testsupport.OfType[session.Message](events) {
		if text, ok := strings.CutPrefix(m.Content, "⚠ pilotdesk: "); ok {
			out = append(out, text)
		}
	}
	return out
}

func hasNote(events []session.Event, part string) bool {
	return slices.ContainsFunc(notes(events), func(n string) bool { return strings.Contains(n, part) })
}

// TestStopAtDenialCompletes: Codex's only rejection ends its turn
// (stopReason cancelled); a turn that ends so right after the relay denied
// a tool in Plan is completed, with a note, not an error. In Act the tool
// runs and the same agent's turn ends normally.
func TestStopAtDenialCompletes(t *testing.T) {
	t.Parallel()
	opts, f := newFake(t)
	h := newHost("plan")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	if err := run(t, s, "codextool"); err != nil {
		t.Fatalf("plan turn of an agent that stops at a denial: %v, want completed", err)
	}
	if !hasNote(h.Events(), "ends its turn when a tool call is denied") {
		t.Errorf("no note that the agent stops at a denied tool; notes %q", notes(h.Events()))
	}
	if ends := testsupport.OfType[session.ToolEnd](h.Events()); len(ends) != 1 || !ends[0].Denied {
		t.Errorf("tool ends = %+v, want one denied", ends)
	}
	h.SetMode("act")
	if err := run(t, s, "codextool"); err != nil {
		t.Fatalf("act turn: %v", err)
	}
	if got := f.waitOutcomes(2); !slices.Equal(got, []string{"abort", "approved"}) {
		t.Errorf("answers = %q", got)
	}
}

// TestToolTitleFromUpdate: Claude titles its tool_call "Terminal" and
// names the command in the tool_call_update after it; the row takes the
// update's title.
func TestToolTitleFromUpdate(t *testing.T) {
	t.Parallel()
	opts, _ := newFake(t)
	h := newHost("act")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	if err := run(t, s, "placeholder"); err != nil {
		t.Fatal(err)
	}
	starts := testsupport.OfType[session.ToolStart](h.Events())
	if len(starts) != 1 || starts[0].ToolName != "echo hi > hi.txt" {
		t.Fatalf("tool starts = %+v, want one named by its command", starts)
	}
	var args map[string]string
	if json.Unmarshal(starts[0].Arguments, &args) != nil || args["command"] != "echo hi > hi.txt" {
		t.Errorf("arguments = %s", starts[0].Arguments)
	}
}

// TestLabelFromTitle: the agent's name for people is its agentInfo.title.
func TestLabelFromTitle(t *testing.T) {
	t.Parallel()
	opts, _ := newFake(t, fakeagent.EnvName+"=@zed-industries/claude-agent-acp", fakeagent.EnvTitle+"=Claude Agent")
	a := newAgent(t, opts)
	open(t, a, "c1", session.OpenOptions{}, newHost("act"))
	if got := a.Label(); got != "Claude Agent (ACP)" {
		t.Errorf("Label = %q, want Claude Agent (ACP)", got)
	}
}

// TestNoUnadvertisedMethods: the relay keeps permission requests behind
// the updates before them without sending the agent anything it did not
// advertise (the old _pilotdesk/barrier made Claude and Gemini print
// "Method not found" on every permission).
func TestNoUnadvertisedMethods(t *testing.T) {
	t.Parallel()
	opts, f := newFake(t)
	h := newHost("act")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	for range 5 {
		if err := run(t, s, "tool x.txt"); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range f.entries() {
		if strings.HasPrefix(e.Method, "_") {
			t.Errorf("the agent was sent %s", e.Method)
		}
	}
}

// TestUsageFromQuota: the Gemini CLI's token counts come in the prompt
// response's _meta.quota; an agent that reports none (Codex) is said to,
// once, by a usage event with no figures (the clients' usage lines say
// it), not by a note in the transcript.
func TestUsageFromQuota(t *testing.T) {
	t.Parallel()
	opts, _ := newFake(t)
	h := newHost("act")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	if err := run(t, s, "quota"); err != nil {
		t.Fatal(err)
	}
	u := testsupport.OfType[session.Usage](h.Events())
	if len(u) != 1 || deref(u[0].InputTokens) != 321 || deref(u[0].OutputTokens) != 12 {
		t.Fatalf("usage = %v, want 321/12", shape(h.Events()))
	}
	if hasNote(h.Events(), "reports no usage") {
		t.Error("an agent that reports usage is said not to")
	}
	for range 2 {
		if err := run(t, s, "nousage"); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, u := range testsupport.OfType[session.Usage](h.Events()) {
		if u.Unreported {
			n++
			if u.InputTokens != nil || u.Model != "" || u.Cost != nil {
				t.Errorf("the event that says there is no usage has figures: %+v", u)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d events saying that the agent reports no usage, want 1: %v", n, shape(h.Events()))
	}
	if hasNote(h.Events(), "reports no usage") {
		t.Errorf("a note in the transcript says it too: %q", notes(h.Events()))
	}
}

// TestUnaskedFailedToolWarns: a command the agent ran without asking is
// reported as beyond Plan's reach even when it failed.
func TestUnaskedFailedToolWarns(t *testing.T) {
	t.Parallel()
	opts, _ := newFake(t)
	h := newHost("plan")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	if err := run(t, s, "noaskfail"); err != nil {
		t.Fatal(err)
	}
	if !hasNote(h.Events(), "without asking permission") {
		t.Errorf("notes %q, want the warning that Plan cannot stop the agent's tools", notes(h.Events()))
	}
}

// TestLoadFailureSaysContextLost: when session/load fails the
// conversation goes on in a new session, and the transcript says once
// that the agent lost what came before.
func TestLoadFailureSaysContextLost(t *testing.T) {
	t.Parallel()
	opts, f := newFake(t, fakeagent.EnvLoadFails+"=1")
	a := newAgent(t, opts)
	h := newHost("act")
	s := open(t, a, "c1", session.OpenOptions{}, h)
	if err := run(t, s, "hello"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	h2 := newHost("act")
	s = open(t, a, "c1", session.OpenOptions{Resume: true}, h2)
	if err := run(t, s, "hello"); err != nil {
		t.Fatal(err)
	}
	// The load of a session closed a moment ago is tried a few times
	// (Codex lets a closed session go after it answers).
	if len(f.find("session/load")) < 1 || len(f.find("session/new")) != 2 {
		t.Errorf("load %d, new %d; want failed loads and a new session", len(f.find("session/load")), len(f.find("session/new")))
	}
	if !hasNote(h2.Events(), "no longer knows what was said before") {
		t.Errorf("notes %q, want that the agent lost the context", notes(h2.Events()))
	}
}

// TestCloseWithoutSessionClose: an agent without session/close (Codex)
// keeps the session; the next Open takes it up again instead of loading a
// session the agent still holds.
func TestCloseWithoutSessionClose(t *testing.T) {
	t.Parallel()
	opts, f := newFake(t, fakeagent.EnvClose+"=1")
	a := newAgent(t, opts)
	s := open(t, a, "c1", session.OpenOptions{}, newHost("act"))
	if err := run(t, s, "echo one"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	h := newHost("act")
	s = open(t, a, "c1", session.OpenOptions{Resume: true}, h)
	if err := run(t, s, "echo two"); err != nil {
		t.Fatal(err)
	}
	if got := testsupport.Text(h.Events()); got != "turn 2: echo two" {
		t.Errorf("the turn after the close: %q, want the same agent session's second turn", got)
	}
	if n := len(f.find("session/load")) + len(f.find("session/new")); n != 1 {
		t.Errorf("%d session/new and session/load, want the first session/new alone", n)
	}
}

// TestAgentPlanMode: an agent with a "plan" session mode (Claude) is put in
// it for a turn in Plan and back in its first mode for one in Act; the
// relay still denies every permission in Plan. Another agent with such a
// mode (the Gemini CLI's hides its tools) is left in its own.
func TestAgentPlanMode(t *testing.T) {
	t.Parallel()
	opts, f := newFake(t, fakeagent.EnvModes+"=1", fakeagent.EnvName+"=@zed-industries/claude-agent-acp")
	h := newHost("act")
	s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
	for _, mode := range []string{"act", "plan", "plan", "act"} {
		h.SetMode(mode)
		if err := run(t, s, "tool "+mode+".txt"); err != nil {
			t.Fatal(err)
		}
	}
	var set []string
	for _, e := range f.find("session/set_mode") {
		var p struct {
			ModeID string `json:"modeId"`
		}
		json.Unmarshal(e.Params, &p)
		set = append(set, p.ModeID)
	}
	if !slices.Equal(set, []string{"plan", "default"}) {
		t.Errorf("modes set %q, want plan then default", set)
	}
	if got := f.waitOutcomes(4); !slices.Equal(got, []string{"opt-allow_once", "opt-reject_once", "opt-reject_once", "opt-allow_once"}) {
		t.Errorf("answers %q", got)
	}

	opts, f = newFake(t, fakeagent.EnvModes+"=1", fakeagent.EnvName+"=gemini-cli")
	s = open(t, newAgent(t, opts), "c2", session.OpenOptions{}, newHost("plan"))
	if err := run(t, s, "tool plan.txt"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.find("session/set_mode")); n != 0 {
		t.Errorf("another agent's mode was set %d times", n)
	}
}
