package relay_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// budgetScript spends through the scripted agent's usage step: "four"
// costs 4 credits; "cross" costs 3, streams on, costs 3 more and ends, so
// that it can cross a budget in its middle; anything else is free.
const budgetScript = `{
  "turns": [
    {"match": "four", "steps": [{"delta": "four credits"}, {"usage": {"model": "gpt-5", "totalNanoAiu": 4000000000}}]},
    {"match": "cross", "steps": [
      {"usage": {"model": "gpt-5", "totalNanoAiu": 3000000000}},
      {"delta": "still going "},
      {"usage": {"model": "gpt-5", "totalNanoAiu": 3000000000}},
      {"delta": "to the end"}
    ]},
    {"steps": [{"delta": "free"}]}
  ]
}`

func budgetAgent(t *testing.T) session.Agent {
	t.Helper()
	s, err := script.Parse("budget.json", []byte(budgetScript))
	if err != nil {
		t.Fatal(err)
	}
	return script.New(s)
}

// decodeBudget reads a copilot:budget frame, checking the fields it must
// always have.
func decodeBudget(t *testing.T, f relaytest.Frame) protocol.Budget {
	t.Helper()
	m := dataMap(t, f)
	for _, k := range []string{"budgetCredits", "spentCredits", "periodSeconds", "serverTime"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("copilot:budget without %s: %s", k, f.Raw)
		}
	}
	if _, ok := m["resetsAt"]; ok != (m["spentCredits"].(float64) >= m["budgetCredits"].(float64)) {
		t.Fatalf("copilot:budget has resetsAt %v, want it exactly while spent ≥ budget: %s", ok, f.Raw)
	}
	if len(m) > 5 {
		t.Fatalf("copilot:budget has fields it should not: %s", f.Raw)
	}
	var b protocol.Budget
	f.Decode(t, &b)
	if _, err := time.Parse(protocol.TimeLayout, b.ServerTime); err != nil {
		t.Fatalf("copilot:budget serverTime: %v in %s", err, f.Raw)
	}
	return b
}

// waitBudget waits for the copilot:budget that says spent credits.
func waitBudget(t *testing.T, cl *relaytest.Client, spent float64) protocol.Budget {
	t.Helper()
	f := cl.WaitFor(protocol.TypeBudget, func(f relaytest.Frame) bool { return f.Field("spentCredits") == spent })
	return decodeBudget(t, f)
}

// budgetAfter is waitBudget for a copilot:budget that may already be among
// frames, those a turn's wait read: the spend is stored with the batch
// that holds the turn's quota, and when its copilot:idle is in the same
// batch (a busy machine batches more) the budget can come first.
func budgetAfter(t *testing.T, cl *relaytest.Client, frames []relaytest.Frame, spent float64) protocol.Budget {
	t.Helper()
	for i := len(frames) - 1; i >= 0; i-- {
		if f := frames[i]; f.Type == protocol.TypeBudget && f.Field("spentCredits") == spent {
			return decodeBudget(t, f)
		}
	}
	return waitBudget(t, cl, spent)
}

// runTurn sends a prompt and waits for its copilot:idle, which must say
// completed; it returns the turn's frames.
func runTurn(t *testing.T, cl *relaytest.Client, id, prompt string) []relaytest.Frame {
	t.Helper()
	cl.Send(protocol.TypeSend, protocol.Send{ConversationID: id, Prompt: prompt})
	idle, frames := cl.WaitForCollect(protocol.TypeIdle, func(f relaytest.Frame) bool { return f.Field("conversationId") == id })
	if s := idle.Field("status"); s != protocol.StatusCompleted {
		t.Fatalf("turn %q in %s ended %v: %s", prompt, id, s, idle.Raw)
	}
	return frames
}

// refused sends a prompt and expects budget_exceeded, with nothing started:
// no user message, no turn.
func refused(t *testing.T, cl *relaytest.Client, id string) protocol.Error {
	t.Helper()
	cl.Send(protocol.TypeSend, protocol.Send{ConversationID: id, Prompt: "four again"})
	var e protocol.Error
	cl.WaitFor(protocol.TypeError, nil).Decode(t, &e)
	if e.Code != protocol.CodeBudgetExceeded || e.Type != protocol.TypeSend || e.ConversationID != id {
		t.Fatalf("copilot:send over the budget got %+v, want budget_exceeded", e)
	}
	for _, f := range sync_(t, cl) {
		if f.Type != protocol.TypeBudget {
			t.Fatalf("a refused send started something: %s", f.Raw)
		}
	}
	return e
}

// The budget over real WebSockets on an SQLite data dir: the spend of
// every conversation counts, the first copilot:budget comes as a
// connection opens and another when the spend changes, a send below the
// budget runs, a turn that crosses it runs to its end, a send once spent ≥
// budget gets budget_exceeded with the figures and starts nothing, and a
// restart on the same data dir remembers what was spent.
func TestBudgetAcrossConversationsAndRestart(t *testing.T) {
	checkNoLeaks(t)
	dir := t.TempDir()
	open := func(credits float64) (*relaytest.Server, history.Store) {
		st, err := sqlite.Open(context.Background(), dir, sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		srv := relaytest.Start(t, relay.Config{Agent: budgetAgent(t), Store: st, BudgetCredits: credits})
		return srv, st
	}
	stop := func(srv *relaytest.Server, st history.Store) {
		srv.Close()
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}

	srv, st := open(10)
	cl := srv.Dial(t)
	b := decodeBudget(t, cl.Expect(protocol.TypeBudget)) // the first frame
	if b.BudgetCredits != 10 || b.SpentCredits != 0 || b.PeriodSeconds != int64(30*24*time.Hour/time.Second) || b.ResetsAt != "" {
		t.Fatalf("first copilot:budget %+v", b)
	}

	frames := runTurn(t, cl, "a", "four")
	if b = budgetAfter(t, cl, frames, 4); b.Warn() || b.Exceeded() || b.Remaining() != 6 {
		t.Fatalf("after 4 credits: %+v (warn %v)", b, b.Warn())
	}
	frames = runTurn(t, cl, "b", "four") // another conversation: the spend adds up
	if b = budgetAfter(t, cl, frames, 8); !b.Warn() || b.Exceeded() || b.ResetsAt != "" {
		t.Fatalf("after 8 credits: %+v, want the 80%% warning and sends allowed", b)
	}

	// 8 < 10: the turn starts, crosses the budget after its first call
	// and still runs to its end.
	frames = runTurn(t, cl, "c", "cross")
	var text strings.Builder
	quotas := 0
	for _, f := range frames {
		switch f.Type {
		case protocol.TypeDelta:
			text.WriteString(f.Field("content").(string))
		case protocol.TypeQuota:
			quotas++
		}
	}
	if text.String() != "still going to the end" || quotas != 2 {
		t.Fatalf("the turn that crossed the budget was cut short: %q, %d quotas: %s", text.String(), quotas, framesString(frames))
	}
	b = budgetAfter(t, cl, frames, 14)
	resets, err := time.Parse(protocol.TimeLayout, b.ResetsAt)
	if err != nil || !b.Exceeded() || b.Remaining() != 0 {
		t.Fatalf("over the budget: %+v (resetsAt: %v)", b, err)
	}
	// The budget falls below 10 again once the hour of the first 8
	// credits has left the 30 days.
	if d := time.Until(resets); d < 30*24*time.Hour-2*time.Hour || d > 30*24*time.Hour {
		t.Fatalf("resetsAt %s is %v away, want about 30 days", b.ResetsAt, d)
	}

	e := refused(t, cl, "a")
	for _, want := range []string{"spent 14 of 10 credits in the last 30 days", "--budget-credits", resets.UTC().Format("2 Jan 2006 15:04 UTC")} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("the refusal %q does not say %q", e.Message, want)
		}
	}
	refused(t, cl, "new") // a new conversation too
	stop(srv, st)

	// The same data dir: the spend is remembered.
	srv, st = open(10)
	cl = srv.Dial(t)
	if b := decodeBudget(t, cl.Expect(protocol.TypeBudget)); b.SpentCredits != 14 || !b.Exceeded() || b.ResetsAt == "" {
		t.Fatalf("after a restart: %+v, want 14 credits spent", b)
	}
	refused(t, cl, "b")
	stop(srv, st)

	// A bigger budget lets turns run again, and goes on counting.
	srv, st = open(20)
	cl = srv.Dial(t)
	if b := decodeBudget(t, cl.Expect(protocol.TypeBudget)); b.SpentCredits != 14 || b.BudgetCredits != 20 || b.Exceeded() || b.Warn() {
		t.Fatalf("with a budget of 20: %+v", b)
	}
	budgetAfter(t, cl, runTurn(t, cl, "a", "four"), 18)
	stop(srv, st)
}

// A spend leaves the budget's period: the relay tells every connection
// when it does, without being asked, and sends are accepted again.
func TestBudgetPeriodSlides(t *testing.T) {
	checkNoLeaks(t)
	// The refusal must come before the spend leaves the period: two turns,
	// their budgets on both connections and a send, which with -race on a
	// busy machine can take more than the 1.5 s the period was.
	const period = 7500 * time.Millisecond
	srv := relaytest.Start(t, relay.Config{Agent: budgetAgent(t), BudgetCredits: 5, BudgetPeriod: period})
	cl := srv.Dial(t)
	cl.Expect(protocol.TypeBudget)
	other := srv.Dial(t) // a second connection hears of every change too
	other.Expect(protocol.TypeBudget)

	runTurn(t, cl, "a", "four")
	b := budgetAfter(t, cl, runTurn(t, cl, "a", "four"), 8)
	if b.PeriodSeconds != 7 || b.ResetsAt == "" {
		t.Fatalf("over the budget: %+v", b)
	}
	waitBudget(t, other, 8)
	e := refused(t, cl, "a")
	if !strings.Contains(e.Message, "spent 8 of 5 credits in the last 7.5s") {
		t.Fatalf("refusal %q", e.Message)
	}

	// Both spends are of one hour, which counts until its last spend
	// leaves the period: then the spend is 0 again.
	for _, c := range []*relaytest.Client{cl, other} {
		if b := waitBudget(t, c, 0); b.Exceeded() || b.ResetsAt != "" {
			t.Fatalf("after the period: %+v", b)
		}
	}
	budgetAfter(t, cl, runTurn(t, cl, "a", "four"), 4)
}

// Without a budget the relay sends no copilot:budget and refuses nothing,
// and it keeps the spend all the same, so a budget set later counts it.
// The spend is stored by the time its copilot:quota reaches a client.
func TestNoBudgetStillKeepsSpend(t *testing.T) {
	checkNoLeaks(t)
	store := history.NewMemory()
	srv := relaytest.Start(t, relay.Config{Agent: budgetAgent(t), Store: store})
	cl := srv.Dial(t)
	for i := range 3 {
		cl.Send(protocol.TypeSend, protocol.Send{ConversationID: "a", Prompt: "four"})
		cl.Expect(protocol.TypeSubscribed) // not copilot:budget
		cl.WaitFor(protocol.TypeQuota, nil)
		if sum, want := storedSpend(t, store), int64(i+1)*4_000_000_000; sum != want {
			t.Fatalf("when the quota arrived the store had %d nano-AIU spent, want %d", sum, want)
		}
		cl.WaitFor(protocol.TypeIdle, nil)
		cl.Send(protocol.TypeUnsubscribe, protocol.ConversationRef{ConversationID: "a"})
	}
	for _, f := range sync_(t, cl) {
		if f.Type == protocol.TypeBudget {
			t.Fatalf("a relay without a budget sent %s", f.Raw)
		}
	}
	srv.Close()

	// A relay with a budget on that store counts the 12 credits.
	srv = relaytest.Start(t, relay.Config{Agent: budgetAgent(t), Store: store, BudgetCredits: 12})
	cl = srv.Dial(t)
	if b := decodeBudget(t, cl.Expect(protocol.TypeBudget)); b.SpentCredits != 12 || !b.Exceeded() {
		t.Fatalf("a budget set later: %+v", b)
	}
	refused(t, cl, "a")
}

func TestBudgetConfigChecked(t *testing.T) {
	for _, cfg := range []relay.Config{{BudgetCredits: -1}, {BudgetPeriod: -time.Hour}} {
		cfg.Agent = relaytest.EchoAgent()
		if _, err := relay.New(cfg); err == nil {
			t.Errorf("relay.New accepted %+v", cfg)
		}
	}
}

// A spend whose write fails (a full disk) is kept and stored once the
// store writes again, although its copilot:quota was never sent.
func TestBudgetSpendKeptThroughAFullDisk(t *testing.T) {
	checkNoLeaks(t)
	store := newFullStore()
	srv := relaytest.Start(t, relay.Config{Agent: budgetAgent(t), Store: store, BudgetCredits: 100, Logger: slog.New(slog.DiscardHandler)})
	cl := srv.Dial(t)
	cl.Expect(protocol.TypeBudget)
	release := store.holdWrites()
	cl.Send(protocol.TypeSend, protocol.Send{ConversationID: "a", Prompt: "four"})
	waitBudget(t, cl, 4) // counted, not stored yet
	store.setFull(true)
	release()
	cl.WaitFor(protocol.TypeAgentError, nil)
	if n := storedSpend(t, store); n != 0 {
		t.Fatalf("a full store holds %d nano-AIU", n)
	}
	store.setFull(false)
	for deadline := time.Now().Add(relaytest.Timeout); storedSpend(t, store) != 4_000_000_000; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the spend was not stored once the disk had room: %d nano-AIU", storedSpend(t, store))
		}
	}
}

func storedSpend(t *testing.T, l history.Ledger) int64 {
	t.Helper()
	entries, err := l.Spent(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, e := range entries {
		sum += e.NanoAIU
	}
	return sum
}

// A copilot:budget never overtakes the events whose spend it counts: the
// terminal holds a budget note while a turn runs, and one that came before
// the turn's first event was said in the middle of the user's /run (a
// docs/cost-and-plan.md recording, on a busy machine). Writes spaced far
// apart (CommitInterval) make the quota's write come after budgetDelay.
func TestBudgetAfterTheSpendingEvents(t *testing.T) {
	checkNoLeaks(t)
	srv := relaytest.Start(t, relay.Config{Agent: budgetAgent(t), BudgetCredits: 10, CommitInterval: 500 * time.Millisecond})
	cl := srv.Dial(t)
	decodeBudget(t, cl.Expect(protocol.TypeBudget))
	cl.Send(protocol.TypeSend, protocol.Send{ConversationID: "a", Prompt: "four"})
	budget, before := cl.WaitForCollect(protocol.TypeBudget, func(f relaytest.Frame) bool { return f.Field("spentCredits") == 4.0 })
	var quota bool
	for _, f := range before {
		quota = quota || (f.Type == protocol.TypeQuota && f.Field("aiCredits") != nil)
	}
	if !quota {
		t.Fatalf("%s came before the copilot:quota that spent it; before it: %s", budget.Raw, framesString(before))
	}
}
