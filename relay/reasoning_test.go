package relay_test

import (
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/session"
)

// An agent's reasoning and plan reach the clients as copilot:reasoning and
// copilot:plan events, stored and replayed like the others; reasoning too
// long for a frame is cut into several that join to the whole, a plan too
// long is shortened.
func TestReasoningAndPlanEvents(t *testing.T) {
	parallel(t)
	e := start(t, nil)
	cl, _ := e.subscribe("r")
	ft := e.startTurn(cl, "r", "go", nil)

	ft.Host.Emit(session.Reasoning{MessageID: "th1", Content: "Looking at "})
	ft.Host.Emit(session.Reasoning{MessageID: "th1", Content: "the notes."})
	long := mixedText(3 << 19)
	ft.Host.Emit(session.Reasoning{MessageID: "th2", Content: long})
	ft.Host.Emit(session.Plan{Entries: []session.PlanEntry{
		{Content: "Read notes", Priority: "high", Status: "completed"},
		{Content: strings.Repeat("é", 5000), Priority: "low", Status: "pending"},
	}})
	ft.finish(nil)
	_, frames := untilFrame(t, cl, "copilot:idle", nil)

	var th1, th2 strings.Builder
	n2 := 0
	var plan *protocol.Plan
	for _, f := range frames {
		switch f.Type {
		case "copilot:reasoning":
			var d protocol.Reasoning
			f.Decode(t, &d)
			if d.MessageID == "th1" {
				th1.WriteString(d.Content)
			} else {
				th2.WriteString(d.Content)
				n2++
			}
		case "copilot:plan":
			plan = new(protocol.Plan)
			f.Decode(t, plan)
		}
	}
	if th1.String() != "Looking at the notes." {
		t.Errorf("reasoning th1 = %q", th1.String())
	}
	if th2.String() != long || n2 < 2 {
		t.Errorf("the 1.5 MiB reasoning came as %d events of %d bytes in all, want several joining to %d", n2, th2.Len(), len(long))
	}
	if plan == nil || len(plan.Entries) != 2 || plan.Entries[0] != (protocol.PlanEntry{Content: "Read notes", Priority: "high", Status: "completed"}) ||
		!strings.HasSuffix(plan.Entries[1].Content, "é…") || len(plan.Entries[1].Content) > 2010 || plan.Entries[1].Status != "pending" {
		t.Errorf("plan = %+v", plan)
	}

	// Replayed from the history.
	re := e.dial()
	re.Send("copilot:subscribe", map[string]any{"conversationId": "r", "sinceSeq": 0})
	_, replayed := untilFrame(t, re, "copilot:subscribed", nil)
	kinds := map[string]int{}
	for _, f := range replayed {
		kinds[f.Type]++
	}
	if kinds["copilot:reasoning"] != 2+n2 || kinds["copilot:plan"] != 1 {
		t.Errorf("replay holds %d reasoning and %d plan events", kinds["copilot:reasoning"], kinds["copilot:plan"])
	}
}
