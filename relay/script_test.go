package relay_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session/script"
)

const scenario = `{
  "turns": [
    {
      "match": "deploy",
      "steps": [
        {"delta": "Checking. "},
        {"tool": {"name": "bash", "arguments": {"command": "make deploy"}, "result": "deployed"}},
        {"delta": "The tool was {{tool}}. "},
        {"input": {"type": "approval", "prompt": "Run the migration?", "choices": ["Run it", "Skip"]}},
        {"ask": {"question": "Which environment?", "choices": ["staging", "prod"], "allowFreeform": false}},
        {"delta": "You said {{answer}}."},
        {"usage": {"model": "gpt-5", "cost": 1, "quotaSnapshots": {"premium": {"usedRequests": 1}}}}
      ]
    },
    {"match": "broken", "steps": [{"input": {"type": "choice", "prompt": "Pick", "choices": []}}, {"delta": "after {{error}}"}]},
    {"steps": [{"delta": "Echo: {{prompt}} in {{mode}}"}]}
  ]
}`

// The scripted agent through the relay: the mode decides its tool calls, its
// questions go through the input bridge, a rejection ends the turn.
func TestScriptAgent(t *testing.T) {
	checkNoLeaks(t)
	s, err := script.Parse("test.json", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	srv := relaytest.Start(t, relay.Config{Agent: script.New(s)})
	cl := srv.Dial(t)

	// plan: the tool is denied, the approval answered, the choice answered.
	cl.Send("copilot:send", map[string]any{"conversationId": "sc", "prompt": "deploy now", "mode": "plan"})
	end := cl.WaitFor("copilot:tool_end", nil)
	if end.Field("denied") != true || end.Field("success") != false {
		t.Fatalf("tool_end in plan %s", end.Raw)
	}
	appr := cl.WaitFor("copilot:user_input_request", nil)
	if appr.Field("inputType") != "approval" || appr.Field("allowFreeform") != false {
		t.Fatalf("approval %s", appr.Raw)
	}
	cl.Send("copilot:user_input_response", map[string]any{"conversationId": "sc", "requestId": appr.Field("requestId"), "answer": "approve"})
	cl.Expect("copilot:user_input_closed")
	ask := cl.Expect("copilot:user_input_request")
	cl.Send("copilot:user_input_response", map[string]any{"conversationId": "sc", "requestId": ask.Field("requestId"), "answer": "staging"})
	cl.Expect("copilot:user_input_closed")
	idle, frames := cl.WaitForCollect("copilot:idle", nil)
	if s := idle.Field("status"); s != "completed" {
		t.Fatalf("status %v", s)
	}
	var gotMsg, gotQuota bool
	for _, f := range frames {
		switch f.Type {
		case "copilot:message":
			gotMsg = f.Field("content") == "Checking. The tool was denied. You said staging."
		case "copilot:quota":
			gotQuota = f.Field("model") == "gpt-5"
		}
	}
	if !gotMsg || !gotQuota {
		t.Fatalf("turn ended without the message or the quota: %s", framesString(frames))
	}

	// act: the tool runs; rejecting the approval cancels the turn.
	cl.Send("copilot:send", map[string]any{"conversationId": "sc", "prompt": "deploy again", "mode": "act"})
	cl.Expect("copilot:mode_changed")
	end = cl.WaitFor("copilot:tool_end", nil)
	if end.Field("denied") != false || end.Field("success") != true {
		t.Fatalf("tool_end in act %s", end.Raw)
	}
	appr = cl.WaitFor("copilot:user_input_request", nil)
	cl.Send("copilot:user_input_response", map[string]any{"conversationId": "sc", "requestId": appr.Field("requestId"), "answer": "reject"})
	if c := cl.Expect("copilot:user_input_closed"); c.Field("reason") != "rejected" {
		t.Fatalf("closed %s", c.Raw)
	}
	idle, frames = cl.WaitForCollect("copilot:idle", nil)
	if idle.Field("status") != "rejected" {
		t.Fatalf("idle %s", idle.Raw)
	}
	if last := frames[len(frames)-1]; last.Type != "copilot:message" || last.Field("content") != "Checking. The tool was approved. " {
		t.Fatalf("partial turn kept as %s", last.Raw)
	}

	// A malformed request from the script: copilot:error, the turn goes on.
	cl.Send("copilot:send", map[string]any{"conversationId": "sc", "prompt": "broken"})
	cl.WaitFor("copilot:error", nil)
	if s := cl.WaitFor("copilot:idle", nil).Field("status"); s != "completed" {
		t.Fatalf("status %v", s)
	}

	// The fallback turn echoes the prompt and the mode.
	cl.Send("copilot:send", map[string]any{"conversationId": "sc2", "prompt": "hello", "mode": "plan"})
	if m := cl.WaitFor("copilot:message", nil); m.Field("content") != "Echo: hello in plan" {
		t.Fatalf("echo %s", m.Raw)
	}
}

// TestCredits: the scripted agent's totalNanoAiu, as the Copilot CLI
// reports it, reaches clients as aiCredits on copilot:quota and
// copilot:shutdown, with aiCreditsStatus passed as it came.
func TestCredits(t *testing.T) {
	s, err := script.Parse("credits.json", []byte(`{"turns": [{"steps": [
		{"usage": {"model": "gpt-5", "cost": 1, "totalNanoAiu": 1500000000, "aiCreditsStatus": "available"}},
		{"usage": {"model": "my-model", "aiCreditsStatus": "unavailable"}},
		{"shutdown": {"totalPremiumRequests": 1, "totalNanoAiu": 2250000000}}
	]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := relaytest.Start(t, relay.Config{Agent: script.New(s)})
	cl := srv.Dial(t)
	cl.Send("copilot:send", map[string]any{"conversationId": "cr", "prompt": "go"})
	q := cl.WaitFor("copilot:quota", nil)
	if q.Field("aiCredits") != 1.5 || q.Field("aiCreditsStatus") != "available" {
		t.Fatalf("quota %s: want aiCredits 1.5, aiCreditsStatus available", q.Raw)
	}
	q = cl.Expect("copilot:quota")
	if q.Field("aiCredits") != nil || q.Field("aiCreditsStatus") != "unavailable" {
		t.Fatalf("quota %s: want no aiCredits, aiCreditsStatus unavailable", q.Raw)
	}
	sd := cl.Expect("copilot:shutdown")
	if sd.Field("aiCredits") != 2.25 {
		t.Fatalf("shutdown %s: want aiCredits 2.25", sd.Raw)
	}
}

// TestDemoUsageAddsUp: the built-in demo's premium requests add up over its
// turns, whichever conversation they are in and whether or not a turn has
// a usage step of its own, and the window's and the terminal's words
// (conversation.UsageText, TurnText, the web client's words.js alike) say
// the figures the relay sent. A script's own usage steps report what they
// say (TestScriptAgent).
func TestDemoUsageAddsUp(t *testing.T) {
	parallel(t) // the demo paces its replies: it waits more than it computes
	checkNoLeaks(t)
	demo, err := script.Demo()
	if err != nil {
		t.Fatal(err)
	}
	srv := relaytest.Start(t, relay.Config{Agent: script.NewDemo(demo, script.DemoOptions{})})
	cl := srv.Dial(t)
	states := map[string]*conversation.State{}
	turns := []struct{ conv, prompt, words string }{
		{"d1", "markdown please", "42 of 300 premium requests used, 86% left"},
		{"d2", "help", "43 of 300 premium requests used, 86% left"},
		{"d1", "usage", "44 of 300 premium requests used, 85% left"},
	}
	last := -1.0
	for _, turn := range turns {
		st := states[turn.conv]
		if st == nil {
			st = conversation.New(turn.conv, conversation.Options{})
			states[turn.conv] = st
		}
		cl.Send("copilot:send", map[string]any{"conversationId": turn.conv, "prompt": turn.prompt, "mode": "act"})
		idle, frames := cl.WaitForCollect("copilot:idle", func(f relaytest.Frame) bool { return f.Field("conversationId") == turn.conv })
		if idle.Field("status") != "completed" {
			t.Fatalf("%q: %s", turn.prompt, idle.Raw)
		}
		quotas := 0
		for _, f := range append(frames, idle) {
			ev, err := protocol.DecodeEvent(f.Raw)
			if err != nil {
				t.Fatal(err)
			}
			st.Apply(client.Event{Type: ev.Type, Data: ev.Data})
			if f.Type != "copilot:quota" {
				continue
			}
			quotas++
			var q struct {
				QuotaSnapshots struct {
					Premium struct{ UsedRequests float64 } `json:"premium_interactions"`
				} `json:"quotaSnapshots"`
			}
			f.Decode(t, &q)
			if used := q.QuotaSnapshots.Premium.UsedRequests; used <= last {
				t.Fatalf("%q: %v premium requests used after %v", turn.prompt, used, last)
			} else {
				last = used
			}
		}
		if quotas != 1 {
			t.Fatalf("%q: %d usage reports, want one", turn.prompt, quotas)
		}
		if len(st.Usage.Quotas) == 0 {
			t.Fatalf("%q: no quota in the conversation's usage", turn.prompt)
		}
		now := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
		if got := conversation.QuotaText(st.Usage.Quotas[0]); got != turn.words {
			t.Errorf("%q: %q, want %q", turn.prompt, got, turn.words)
		}
		for _, line := range []string{conversation.UsageText(st.Usage, st.Turn, now), conversation.TurnText(st.Turn, st.Usage, now)} {
			if !strings.Contains(line, turn.words) {
				t.Errorf("%q: %q does not say %q", turn.prompt, line, turn.words)
			}
		}
	}
}
