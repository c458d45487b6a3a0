package acp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/session"
)

// TestToolArgumentsFilledInLater: a tool call announced pending with empty
// arguments, filled in by an update (as opencode does), starts with its
// arguments, so the window's row says what it runs; text the agent sent in
// between comes first. In Plan the permission request still sees them.
func TestToolArgumentsFilledInLater(t *testing.T) {
	for _, mode := range []string{"act", "plan"} {
		t.Run(mode, func(t *testing.T) {
			opts, _ := newFake(t)
			h := newHost(mode)
			s := open(t, newAgent(t, opts), "c1", session.OpenOptions{}, h)
			if err := run(t, s, "late"); err != nil {
				t.Fatal(err)
			}
			starts := testsupport.OfType[session.ToolStart](h.Events())
			if len(starts) != 1 {
				t.Fatalf("tool starts = %+v, want one", starts)
			}
			var args map[string]string
			if err := json.Unmarshal(starts[0].Arguments, &args); err != nil || args["command"] != "touch late.txt" {
				t.Errorf("the tool started with arguments %s, want the command the update filled in", starts[0].Arguments)
			}
			end := "end:l1:ok"
			if mode == "plan" {
				end = "end:l1:denied"
			}
			got := shape(h.Events())
			if i := slices.Index(got, "start:l1:bash"); i < 1 || got[i-1] != "message:Filling it in." || !slices.Contains(got[i:], end) {
				t.Errorf("events = %q, want the text, then the tool's start and %s", got, end)
			}
			perms := h.Permissions()
			if len(perms) != 1 || string(perms[0].Arguments) != string(starts[0].Arguments) {
				t.Errorf("permission requests = %+v", perms)
			}
			_, err := os.Stat(filepath.Join(opts.WorkDir, "late.txt"))
			if created := err == nil; created != (mode == "act") {
				t.Errorf("late.txt created = %v in %s", created, mode)
			}
		})
	}
}
