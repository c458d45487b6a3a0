package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/client/clienttest"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// ---- store ----

type feed struct {
	t   *testing.T
	s   *Store
	seq map[string]int64
}

func newFeed(t *testing.T, opts Options) *feed {
	return &feed{t: t, s: NewStore(opts), seq: map[string]int64{}}
}

func (f *feed) ev(conv string, data any) {
	f.seq[conv]++
	f.s.Apply(clienttest.Event(f.t, conv, f.seq[conv], data))
}

func rowsOf(s *Store, id string) []conversation.Row { return s.Transcript(id) }

func kinds(rows []conversation.Row) string {
	names := map[conversation.RowKind]string{conversation.RowUser: "user", conversation.RowText: "text", conversation.RowCode: "code", conversation.RowTool: "tool", conversation.RowStatus: "status", conversation.RowMode: "mode", conversation.RowNote: "note"}
	var parts []string
	for _, r := range rows {
		parts = append(parts, names[r.Kind])
	}
	return strings.Join(parts, ",")
}

func TestTurnWithToolInterleaved(t *testing.T) {
	f := newFeed(t, Options{})
	f.ev("c", &protocol.UserMessage{MessageID: "u1", Content: "deploy it\nplease", Mode: protocol.ModeAct})
	v := f.s.Take("c", true).Conv
	if !v.Thinking || !v.Streaming || v.Title != "deploy it" {
		t.Fatalf("after the prompt: %+v", v)
	}
	f.ev("c", &protocol.Delta{MessageID: "m1", Content: "Checking the "})
	f.ev("c", &protocol.Delta{MessageID: "m1", Content: "build... "})
	if v := f.s.Take("c", false).Conv; v.Thinking {
		t.Fatal("still thinking after output")
	}
	f.ev("c", &protocol.ToolStart{ToolCallID: "t1", ToolName: "bash", Arguments: json.RawMessage(`{"command":"make deploy"}`)})
	f.ev("c", &protocol.ToolEnd{ToolCallID: "t1", Success: true, Result: "deployed"})
	f.ev("c", &protocol.Delta{MessageID: "m1", Content: "The tool was approved."})
	f.ev("c", &protocol.Message{MessageID: "m1", Content: "Checking the build... The tool was approved."})
	f.ev("c", &protocol.Idle{Status: protocol.StatusCompleted})

	rows := rowsOf(f.s, "c")
	if kinds(rows) != "user,text,tool,text,status" {
		t.Fatalf("rows %s", kinds(rows))
	}
	if rows[1].Text != "Checking the build... " || !rows[1].Done {
		t.Fatalf("text before the tool: %+v", rows[1])
	}
	if rows[2].State != conversation.ToolApproved || rows[2].Text != "make deploy" || rows[2].Title != "bash" {
		t.Fatalf("tool row %+v", rows[2])
	}
	if rows[3].Text != "The tool was approved." || !rows[3].Done {
		t.Fatalf("text after the tool: %+v", rows[3])
	}
	if f.s.MessageText("c", "m1") != "Checking the build... The tool was approved." {
		t.Fatal("message text")
	}
	if v := f.s.Take("c", false).Conv; v.Streaming || v.Thinking {
		t.Fatal("still streaming after idle")
	}
}

func TestTakeReportsOnlyChangedRows(t *testing.T) {
	f := newFeed(t, Options{})
	f.ev("c", &protocol.UserMessage{Content: "hi"})
	f.ev("c", &protocol.Delta{MessageID: "m", Content: "para one\n\npara"})
	v := f.s.Take("c", false).Conv
	if v.NumRows != 3 || fmt.Sprint(v.Changed) != "[0 1 2]" {
		t.Fatalf("first take: rows %d changed %v", v.NumRows, v.Changed)
	}
	f.ev("c", &protocol.Delta{MessageID: "m", Content: " two"})
	f.ev("c", &protocol.Delta{MessageID: "m", Content: " continues"})
	v = f.s.Take("c", false).Conv
	if fmt.Sprint(v.Changed) != "[2]" || v.Rows[0].Text != "para two continues" || v.Rows[0].Done {
		t.Fatalf("second take: changed %v rows %+v", v.Changed, v.Rows)
	}
	if v.Rows[0].Version != 3 {
		t.Fatalf("tail row version %d, want 3", v.Rows[0].Version)
	}
	if v := f.s.Take("c", false).Conv; len(v.Changed) != 0 {
		t.Fatalf("nothing changed but %v", v.Changed)
	}
}

func TestRejectedTurnKeepsPartialText(t *testing.T) {
	f := newFeed(t, Options{})
	f.ev("c", &protocol.UserMessage{Content: "migrate"})
	f.ev("c", &protocol.Delta{MessageID: "m", Content: "I will run the migration"})
	f.ev("c", &protocol.UserInputRequest{RequestID: "r1", Question: "Run the migration?", Choices: []string{"Run it", "Skip"}, InputType: protocol.InputApproval})
	v := f.s.Take("c", false).Conv
	if v.Pending == nil || v.Pending.Request.RequestID != "r1" || v.Thinking {
		t.Fatalf("pending %+v", v.Pending)
	}
	f.s.MarkAnswering("c", "r1", "", true)
	if v := f.s.Take("c", false).Conv; !v.Pending.Answering {
		t.Fatal("answering not marked")
	}
	f.ev("c", &protocol.UserInputClosed{RequestID: "r1", Reason: protocol.ClosedRejected})
	f.ev("c", &protocol.Message{MessageID: "m", Content: "I will run the migration"})
	f.ev("c", &protocol.Idle{Status: protocol.StatusRejected})
	rows := rowsOf(f.s, "c")
	if kinds(rows) != "user,text,note,status" {
		t.Fatalf("rows %s", kinds(rows))
	}
	if rows[1].Text != "I will run the migration" || rows[3].Text != conversation.RejectedText || rows[2].Text != `You rejected "Run the migration?".` {
		t.Fatalf("rows %+v", rows)
	}
}

func TestModeChangeMarksTranscript(t *testing.T) {
	f := newFeed(t, Options{})
	f.ev("c", &protocol.ModeChanged{Mode: protocol.ModePlan}) // empty conversation: no marker
	f.ev("c", &protocol.UserMessage{Content: "go", Mode: protocol.ModePlan})
	f.ev("c", &protocol.Delta{MessageID: "m", Content: "step one "})
	f.ev("c", &protocol.ModeChanged{Mode: protocol.ModeAct})
	f.ev("c", &protocol.Delta{MessageID: "m", Content: "step two"})
	f.ev("c", &protocol.ModeChanged{Mode: protocol.ModeAct}) // no change: no marker
	rows := rowsOf(f.s, "c")
	if kinds(rows) != "user,text,mode,text" {
		t.Fatalf("rows %s", kinds(rows))
	}
	if rows[2].Mode != protocol.ModeAct || !strings.Contains(rows[2].Text, "next tool call") {
		t.Fatalf("mode row %+v", rows[2])
	}
	if rows[0].Mode != protocol.ModePlan {
		t.Fatal("user row mode")
	}
}

func TestInputRequestLifecycle(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	f := newFeed(t, Options{Options: conversation.Options{Now: func() time.Time { return now }}})
	f.ev("c", &protocol.UserMessage{Content: "x"})
	// The relay's deadline, as it sent it: the window adds no timeout.
	f.ev("c", &protocol.UserInputRequest{RequestID: "r1", Question: "Which env?", Choices: []string{"staging", "prod"}, AllowFreeform: true,
		ExpiresAt: protocol.FormatTime(now.Add(time.Minute))})
	fr := f.s.Take("c", false)
	if !fr.Conv.Pending.Deadline.Equal(now.Add(time.Minute)) {
		t.Fatalf("deadline %v", fr.Conv.Pending.Deadline)
	}
	if !fr.SidebarChanged || !fr.Sidebar[0].Waiting {
		t.Fatalf("sidebar not waiting: %+v", fr.Sidebar)
	}
	// Answered elsewhere.
	f.ev("c", &protocol.UserInputClosed{RequestID: "r1", Reason: protocol.ClosedAnswered})
	// A second request, which times out.
	f.ev("c", &protocol.UserInputRequest{RequestID: "r2", Question: "Name?", AllowFreeform: true, InputType: protocol.InputText})
	f.ev("c", &protocol.UserInputTimeout{RequestID: "r2", Question: "Name?"})
	// A third, which this window answers.
	f.ev("c", &protocol.UserInputRequest{RequestID: "r3", Question: "Pick", Choices: []string{"a", "b"}, InputType: protocol.InputChoice})
	f.s.MarkAnswering("c", "r3", "b", false)
	f.s.Apply(client.Event{Data: &protocol.Error{Code: protocol.CodeInvalidAnswer, Message: "not a choice", ConversationID: "c"}})
	if v := f.s.Take("c", false).Conv; v.Pending == nil || v.Pending.Answering || v.Pending.Hint != conversation.AnswerRefusedText("not a choice") {
		t.Fatalf("refused answer should reopen the request: %+v", v.Pending)
	}
	f.s.MarkAnswering("c", "r3", "b", false)
	f.ev("c", &protocol.UserInputClosed{RequestID: "r3", Reason: protocol.ClosedAnswered})
	// A fourth, withdrawn by an abort.
	f.ev("c", &protocol.UserInputRequest{RequestID: "r4", Question: "Again?", InputType: protocol.InputText, AllowFreeform: true})
	f.ev("c", &protocol.UserInputClosed{RequestID: "r4", Reason: protocol.ClosedAborted})
	f.ev("c", &protocol.Idle{Status: protocol.StatusAborted})

	var notes []string
	for _, r := range rowsOf(f.s, "c") {
		if r.Kind == conversation.RowNote {
			notes = append(notes, r.Text)
		}
	}
	want := []string{
		`"Which env?" was answered from another window.`,
		`No answer in time: the question "Name?" timed out and the agent goes on without an answer.`,
		`You answered "b" to "Pick".`,
		`The question "Again?" was withdrawn: the turn was stopped.`,
	}
	if strings.Join(notes, "\n") != strings.Join(want, "\n") {
		t.Fatalf("notes:\n%s\nwant:\n%s", strings.Join(notes, "\n"), strings.Join(want, "\n"))
	}
	if v := f.s.Take("c", false).Conv; v.Pending != nil {
		t.Fatal("a request is still open")
	}
}

func TestSubscribedPendingKeepsDeadline(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := now
	f := newFeed(t, Options{Options: conversation.Options{Now: func() time.Time { return clock }}})
	req := protocol.UserInputRequest{Header: protocol.Header{ConversationID: "c", Seq: 3}, RequestID: "r1", Question: "q", AllowFreeform: true}
	f.s.Apply(client.Event{Data: &protocol.Subscribed{ConversationID: "c", Mode: protocol.ModePlan, Streaming: true, Seq: 3, Epoch: "e", PendingInput: &req}})
	clock = now.Add(time.Minute)
	f.s.Apply(client.Event{Data: &protocol.Subscribed{ConversationID: "c", Mode: protocol.ModePlan, Streaming: true, Seq: 3, Epoch: "e", PendingInput: &req}})
	v := f.s.Take("c", false).Conv
	if v.Pending == nil || !v.Pending.Since.Equal(now) || v.Mode != protocol.ModePlan || !v.Streaming {
		t.Fatalf("view %+v", v)
	}
	f.s.Apply(client.Event{Data: &protocol.Subscribed{ConversationID: "c", Mode: protocol.ModePlan, Seq: 4, Epoch: "e"}})
	if v := f.s.Take("c", false).Conv; v.Pending != nil || v.Streaming {
		t.Fatal("a subscribed without pendingInput must close the request")
	}
}

func TestResetDropsTranscript(t *testing.T) {
	f := newFeed(t, Options{})
	f.ev("c", &protocol.UserMessage{Content: "old"})
	f.s.Take("c", false)
	f.s.Apply(client.Event{Data: &client.Reset{ConversationID: "c", Epoch: "e2"}})
	v := f.s.Take("c", false).Conv
	if !v.Full || v.NumRows != 0 {
		t.Fatalf("after reset: %+v", v)
	}
}

func TestErrorTurn(t *testing.T) {
	f := newFeed(t, Options{})
	f.ev("c", &protocol.UserMessage{Content: "x"})
	f.ev("c", &protocol.AgentError{Message: "model overloaded"})
	f.ev("c", &protocol.Idle{Status: protocol.StatusError})
	rows := rowsOf(f.s, "c")
	// The error and the turn's end are one row: the error shows once.
	if kinds(rows) != "user,status" || rows[1].Detail != "model overloaded" {
		t.Fatalf("rows %+v", rows)
	}
	// The frame that takes it sees the note row become the status row.
	if v := f.s.Take("c", false).Conv; v.NumRows != 2 {
		t.Fatalf("view %+v", v)
	}
}

func TestUsage(t *testing.T) {
	f := newFeed(t, Options{})
	cost, rd, wr := 1.0, int64(300), int64(0)
	f.ev("c", &protocol.Quota{Model: "gpt-5", Cost: &cost, CacheReadTokens: &rd, CacheWriteTokens: &wr,
		QuotaSnapshots: json.RawMessage(`{"chat":{"isUnlimitedEntitlement":true},"premium_interactions":{"entitlementRequests":300,"usedRequests":12,"remainingPercentage":96,"resetDate":"2026-12-01T00:00:00Z"}}`)})
	// A BYOK report with no snapshots keeps the last quotas.
	f.ev("c", &protocol.Quota{QuotaSnapshots: json.RawMessage(`{}`)})
	f.ev("c", &protocol.Shutdown{TotalPremiumRequests: 1, ModelMetrics: json.RawMessage(`{"gpt-5":{"requests":{"count":1,"cost":1},"usage":{"inputTokens":1200,"outputTokens":80}}}`)})
	u := f.s.Take("c", false).Conv.Usage
	if u.Model != "gpt-5" || *u.Cost != 1 || *u.CacheReadTokens != 300 || len(u.Quotas) != 2 {
		t.Fatalf("usage %+v", u)
	}
	if q := u.Quotas[0]; q.Name != "premium_interactions" || q.Used != 12 || q.Entitlement != 300 || q.RemainingPercent != 96 || !q.HasRemaining {
		t.Fatalf("premium quota %+v", q)
	}
	if !u.Quotas[1].Unlimited {
		t.Fatal("chat quota should be unlimited")
	}
	if !u.HaveTotals || u.TotalPremiumRequests != 1 || len(u.Models) != 1 || u.Models[0].InputTokens != 1200 {
		t.Fatalf("totals %+v", u)
	}
}

func TestSidebarOrderAndTitles(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := newFeed(t, Options{Options: conversation.Options{Now: func() time.Time { clock = clock.Add(time.Second); return clock }}})
	f.s.Apply(client.Event{Data: &protocol.Conversations{Conversations: []protocol.ConversationInfo{
		{ConversationID: "old", Title: "From the relay", UpdatedAt: "2025-01-01T00:00:00Z", Mode: protocol.ModeAct},
	}}})
	f.s.Create("new")
	f.ev("new", &protocol.UserMessage{Content: "   \n  Write a haiku about relays and reconnection and backoff jitter please  "})
	sb := f.s.Take("", false).Sidebar
	if len(sb) != 2 || sb[0].ID != "new" || sb[1].Title != "From the relay" {
		t.Fatalf("sidebar %+v", sb)
	}
	if sb[0].Title != "Write a haiku about relays and reconnection and…" {
		t.Fatalf("title %q", sb[0].Title)
	}
}

// TestConversationChanged: the watched list's entries add, rename and
// delete sidebar entries.
func TestConversationChanged(t *testing.T) {
	f := newFeed(t, Options{})
	for _, frame := range []string{
		`{"type":"copilot:conversation","data":{"conversationId":"a","title":"First","updatedAt":"2026-11-24T10:00:00Z","mode":"act"}}`,
		`{"type":"copilot:conversation","data":{"conversationId":"b","title":"Second","updatedAt":"2026-11-24T11:00:00Z","mode":"plan"}}`,
		`{"type":"copilot:conversation","data":{"conversationId":"a","deleted":true}}`,
	} {
		ev, err := client.Decode([]byte(frame))
		if err != nil {
			t.Fatal(err)
		}
		f.s.Apply(ev)
	}
	side := f.s.Take("", false).Sidebar
	if len(side) != 1 || side[0].ID != "b" || side[0].Title != "Second" || side[0].Mode != protocol.ModePlan {
		t.Fatalf("sidebar %+v", side)
	}
}

// TestFullTakeIsBounded: with FullRows a full take holds only the last
// rows, says where they start, and Rows gives the older ones.
func TestFullTakeIsBounded(t *testing.T) {
	f := newFeed(t, Options{FullRows: 4})
	for i := range 5 {
		f.ev("c", &protocol.UserMessage{MessageID: fmt.Sprint("u", i), Content: fmt.Sprint("prompt ", i)})
	}
	v := f.s.Take("c", true).Conv
	if !v.Full || v.NumRows != 5 || v.From != 1 || len(v.Rows) != 4 || v.Rows[0].Text != "prompt 1" || v.Rows[3].Text != "prompt 4" {
		t.Fatalf("full take: from %d, %d of %d rows: %+v", v.From, len(v.Rows), v.NumRows, v.Rows)
	}
	if old := f.s.Rows("c", -3, 1); len(old) != 1 || old[0].Text != "prompt 0" {
		t.Fatalf("older rows: %+v", old)
	}
	if got := f.s.Rows("c", 3, 99); len(got) != 2 || got[1].Text != "prompt 4" {
		t.Fatalf("rows 3 on: %+v", got)
	}
	if got := f.s.Rows("c", 4, 2); got != nil {
		t.Fatalf("an empty range: %+v", got)
	}
	// Rows is a copy: the fold goes on under it.
	got := f.s.Rows("c", 0, 1)
	got[0].Text = "changed"
	if f.s.Rows("c", 0, 1)[0].Text != "prompt 0" {
		t.Fatal("Rows gave the store's own rows")
	}
	// Changed rows keep their indexes in the conversation.
	f.ev("c", &protocol.UserMessage{MessageID: "u5", Content: "prompt 5"})
	if v := f.s.Take("c", false).Conv; v.Full || fmt.Sprint(v.Changed) != "[5]" || v.NumRows != 6 {
		t.Fatalf("after a new row: full %v changed %v rows %d", v.Full, v.Changed, v.NumRows)
	}
	if v := newFeed(t, Options{}).s.Take("c", true).Conv; v.From != 0 {
		t.Fatalf("an unbounded store's from %d", v.From)
	}
}
