package cli

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// budgetScript's "four" costs 4 AI credits.
const budgetScript = `{"turns": [{"match": "four", "steps": [{"delta": "ok"}, {"usage": {"model": "gpt-5", "totalNanoAiu": 4000000000}}]}, {"steps": [{"delta": "free"}]}]}`

// serveStack starts what `pilotdesk serve args…` starts, in-process.
func serveStack(t *testing.T, args ...string) *stack {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var s relaySettings
	s.register(fs, func(string) string { return "" }, true)
	if err := parseFlags(fs, args, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := s.validate(fromCommandLine); err != nil {
		t.Fatal(err)
	}
	st, err := startStack(context.Background(), s, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func closeStack(t *testing.T, st *stack) {
	t.Helper()
	if err := st.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// --budget-credits and --budget-period reach the relay: clients hear the
// budget, a send once it is spent is refused, and the spend is kept in the
// data dir across a restart.
func TestServeBudgetFlags(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "budget.json")
	if err := os.WriteFile(script, []byte(budgetScript), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--agent", "script", "--script", script,
		"--budget-credits", "4", "--budget-period", "24h"}

	st := serveStack(t, args...)
	cl := relaytest.Dial(t, st.URL, "")
	var b protocol.Budget
	cl.Expect(protocol.TypeBudget).Decode(t, &b)
	if b.BudgetCredits != 4 || b.PeriodSeconds != int64(24*time.Hour/time.Second) || b.SpentCredits != 0 {
		t.Fatalf("copilot:budget %+v, want 4 credits over 24h", b)
	}
	cl.Send(protocol.TypeSend, protocol.Send{ConversationID: "c", Prompt: "four"})
	// The budget broadcast and the turn's idle come in either order (the
	// turn's end-of-turn checkpoint runs between the spend and the idle).
	spent := func(f relaytest.Frame) bool { return f.Type == protocol.TypeBudget && f.Field("spentCredits") == 4.0 }
	if _, before := cl.WaitForCollect(protocol.TypeIdle, nil); !slices.ContainsFunc(before, spent) {
		cl.WaitFor(protocol.TypeBudget, spent)
	}
	closeStack(t, st)

	st = serveStack(t, args...)
	defer closeStack(t, st)
	cl = relaytest.Dial(t, st.URL, "")
	cl.Expect(protocol.TypeBudget).Decode(t, &b)
	if b.SpentCredits != 4 || !b.Exceeded() {
		t.Fatalf("after a restart on the data dir: %+v", b)
	}
	cl.Send(protocol.TypeSend, protocol.Send{ConversationID: "d", Prompt: "free"})
	var e protocol.Error
	cl.WaitFor(protocol.TypeError, nil).Decode(t, &e)
	if e.Code != protocol.CodeBudgetExceeded || !strings.Contains(e.Message, "spent 4 of 4 credits in the last 24 hours") {
		t.Fatalf("send over the budget: %+v", e)
	}
}

func TestServeRefusesBadBudget(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--budget-credits", "-1"}, "--budget-credits must be a number of AI credits from 0 (no budget)"},
		{[]string{"--budget-credits", "lots"}, "invalid value \"lots\" for flag -budget-credits"},
		{[]string{"--budget-period", "30m"}, "--budget-period must be at least 1h"},
		{[]string{"--budget-period", "month"}, "invalid value \"month\" for flag -budget-period"},
	} {
		code, _, stderr := runCLI(t, context.Background(), append([]string{"serve", "--data-dir", memoryDataDir}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("serve %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
	_, stdout, _ := runCLI(t, context.Background(), "serve", "-h")
	for _, want := range []string{"-budget-credits N", "-budget-period D", "(default 720h0m0s)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("serve -h does not say %q:\n%s", want, stdout)
		}
	}
}
