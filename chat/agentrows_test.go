package chat

import (
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestReasoningAndPlanLines: an agent's reasoning is one dim line per run,
// said once the run is over and kept apart from the reply; its plan is
// printed whole when it comes, then only the steps whose status changed,
// and whole again in the next turn.
func TestReasoningAndPlanLines(t *testing.T) {
	h := startREPL(t, plain, nil)
	h.subscribed(nil)
	h.emit(protocol.TypeUserMessage, map[string]any{"messageId": "u1", "content": "retry three times", "mode": "act"})
	h.emit(protocol.TypePlan, map[string]any{"entries": []any{}}) // nothing to print
	h.emit(protocol.TypeReasoning, map[string]any{"messageId": "r1", "content": "The retry loop gives up; "})
	h.emit(protocol.TypeReasoning, map[string]any{"messageId": "r1", "content": "the config\nsays three."})
	step := func(content, status string) map[string]any {
		return map[string]any{"content": content, "priority": "high", "status": status}
	}
	h.emit(protocol.TypePlan, map[string]any{"entries": []any{step("Read client.go", "in_progress"), step("Fix the constant", "pending")}})
	h.emit(protocol.TypePlan, map[string]any{"entries": []any{step("Read client.go", "completed"), step("Fix the constant", "in_progress")}})
	h.delta("Retries: three.")
	h.emit(protocol.TypeReasoning, map[string]any{"messageId": "r2", "content": "Done."})
	h.idle(protocol.StatusCompleted)
	h.waitFor("Thought: Done.")

	want := "act> retry three times\n" +
		"✻ Thought: The retry loop gives up; the config says three.\n" +
		"The agent's plan · 0 of 2 steps done\n" +
		"  ▶ Read client.go\n" +
		"  ○ Fix the constant\n" +
		"  ✓ Read client.go — done\n" +
		"  ▶ Fix the constant — in progress\n" +
		"Retries: three.\n" +
		"✻ Thought: Done.\n"
	if out := h.out.text(); !strings.Contains(out, want) {
		t.Fatalf("output:\n%s\nwant it to contain:\n%s", out, want)
	}

	// The next turn's plan is printed whole, although its steps are the
	// same.
	h.emit(protocol.TypeUserMessage, map[string]any{"messageId": "u2", "content": "again", "mode": "act"})
	h.emit(protocol.TypePlan, map[string]any{"entries": []any{step("Read client.go", "completed"), step("Fix the constant", "in_progress")}})
	h.idle(protocol.StatusCompleted)
	h.waitFor("act> again\nThe agent's plan · 1 of 2 steps done\n  ✓ Read client.go\n  ▶ Fix the constant\n")
}
