package conversation

import (
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

func ev(typ string, data any) client.Event { return client.Event{Type: typ, Data: data} }

// The deadline is the relay's expiresAt moved by the skew measured from
// serverTime, whatever this client's clock says; no expiresAt, no
// deadline. The skew learnt after the question (a replay, then
// copilot:subscribed) moves the deadline too.
func TestDeadlineFollowsTheRelaysClock(t *testing.T) {
	local := time.Date(2026, 11, 15, 12, 0, 0, 0, time.UTC)
	relayNow := local.Add(-90 * time.Second) // the relay's clock is 90 s behind
	st := New("c", Options{Now: func() time.Time { return local }})
	hdr := protocol.Header{ConversationID: "c", Seq: 1}
	expires := relayNow.Add(2 * time.Minute)
	req := protocol.UserInputRequest{Header: hdr, RequestID: "r1", Question: "Go?", AllowFreeform: true, ExpiresAt: protocol.FormatTime(expires), Queued: 2}
	st.Apply(ev(protocol.TypeUserInputRequest, &req))
	if st.Pending == nil || !st.Pending.Deadline.Equal(expires) {
		t.Fatalf("before any serverTime: %+v", st.Pending)
	}
	st.Apply(ev(protocol.TypeSubscribed, &protocol.Subscribed{ConversationID: "c", Mode: protocol.ModeAct, Streaming: true, Seq: 1,
		PendingInput: &protocol.UserInputRequest{Header: hdr, RequestID: "r1", Question: "Go?", ExpiresAt: req.ExpiresAt, Queued: 1},
		ServerTime:   protocol.FormatTime(relayNow)}))
	if st.Skew != -90*time.Second {
		t.Fatalf("skew %s", st.Skew)
	}
	if want := local.Add(2 * time.Minute); !st.Pending.Deadline.Equal(want) {
		t.Fatalf("deadline %s, want %s: two minutes from now on this clock", st.Pending.Deadline, want)
	}
	if st.Pending.Request.Queued != 1 {
		t.Fatalf("queued %d: the subscription's count is the latest", st.Pending.Request.Queued)
	}
	// A question from a relay that waits forever has no deadline.
	st.Apply(ev(protocol.TypeUserInputClosed, &protocol.UserInputClosed{Header: protocol.Header{ConversationID: "c", Seq: 2}, RequestID: "r1", Reason: "aborted"}))
	st.Apply(ev(protocol.TypeUserInputRequest, &protocol.UserInputRequest{Header: protocol.Header{ConversationID: "c", Seq: 3}, RequestID: "r2", Question: "Whenever"}))
	if st.Pending == nil || !st.Pending.Deadline.IsZero() {
		t.Fatalf("no expiresAt: %+v", st.Pending)
	}
}

// Who answered: this client now, this client before a restart (answeredBy
// names this device and kind), another client on this device, another
// device, and an older relay that names nobody. A prompt from another
// device says where it came from.
func TestProvenance(t *testing.T) {
	self := protocol.By{Device: protocol.OwnDevice, Client: protocol.ClientWindow}
	seq := int64(0)
	hdr := func() protocol.Header { seq++; return protocol.Header{ConversationID: "c", Seq: seq} }
	st := New("c", Options{Self: self})
	st.Synced = true // live, unless a case says it is replayed
	ask := func(id string) {
		st.Apply(ev(protocol.TypeUserInputRequest, &protocol.UserInputRequest{Header: hdr(), RequestID: id, Question: "Ship " + id + "?"}))
	}
	closeBy := func(id, reason string, by *protocol.By) string {
		st.Apply(ev(protocol.TypeUserInputClosed, &protocol.UserInputClosed{Header: hdr(), RequestID: id, Reason: reason, AnsweredBy: by}))
		return st.Rows[len(st.Rows)-1].Text
	}
	pixel := &protocol.By{Device: "Pixel", Client: protocol.ClientWeb}
	cases := []struct {
		reason string
		by     *protocol.By
		mine   bool
		want   string
	}{
		{"answered", &self, true, `You answered "yes" to "Ship a?".`},
		{"answered", &self, false, `"Ship b?" was answered from a window on this device.`},
		{"answered", &protocol.By{Device: protocol.OwnDevice, Client: protocol.ClientTerminal}, false, `"Ship c?" was answered from a terminal on this device.`},
		{"answered", pixel, false, `"Ship d?" was answered from Pixel (web).`},
		{"rejected", pixel, false, `"Ship e?" was rejected from Pixel (web).`},
		{"rejected", &self, false, `"Ship f?" was rejected from a window on this device.`},
		{"answered", nil, false, `"Ship g?" was answered from another window.`},
	}
	for i, c := range cases {
		id := string(rune('a' + i))
		ask(id)
		if c.mine {
			st.MarkAnswering(id, "yes", false)
		}
		if got := closeBy(id, c.reason, c.by); got != c.want {
			t.Errorf("%s by %+v: %q, want %q", c.reason, c.by, got, c.want)
		}
	}
	// Replayed (before copilot:subscribed), this device in a window is
	// this window before a restart.
	st.Synced = false
	ask("h")
	if got := closeBy("h", "answered", &self); got != `You answered "Ship h?".` {
		t.Errorf("replayed own answer: %q", got)
	}
	ask("i")
	if got := closeBy("i", "rejected", &self); got != `You rejected "Ship i?".` {
		t.Errorf("replayed own rejection: %q", got)
	}
	st.Apply(ev(protocol.TypeUserMessage, &protocol.UserMessage{Header: hdr(), MessageID: "m1", Content: "deploy", Mode: protocol.ModeAct, SentBy: pixel}))
	if last := st.Rows[len(st.Rows)-1]; last.Kind != RowNote || !strings.Contains(last.Text, "Sent from Pixel (web)") {
		t.Fatalf("after another device's prompt: %+v", last)
	}
	n := len(st.Rows)
	st.Apply(ev(protocol.TypeUserMessage, &protocol.UserMessage{Header: hdr(), MessageID: "m2", Content: "mine", Mode: protocol.ModeAct, SentBy: &self}))
	if len(st.Rows) != n+1 || st.Rows[n].Kind != RowUser {
		t.Fatalf("own prompt added %d rows", len(st.Rows)-n)
	}
}

// The mode-change marker names who switched when changedBy names another
// client (the relay names device tokens only), in the window's row text;
// a switch by this client, or one nobody is named for, says only what it
// does.
func TestModeChangeNamesWhoSwitched(t *testing.T) {
	st := New("c", Options{Self: protocol.By{Device: protocol.OwnDevice, Client: protocol.ClientWindow}})
	seq := int64(0)
	hdr := func() protocol.Header { seq++; return protocol.Header{ConversationID: "c", Seq: seq} }
	st.Apply(ev(protocol.TypeUserMessage, &protocol.UserMessage{Header: hdr(), MessageID: "u1", Content: "go", Mode: protocol.ModeAct}))
	st.Apply(ev(protocol.TypeModeChanged, &protocol.ModeChanged{Header: hdr(), Mode: protocol.ModePlan,
		ChangedBy: &protocol.By{Device: "zebra-phone", Client: protocol.ClientWeb}}))
	st.Apply(ev(protocol.TypeModeChanged, &protocol.ModeChanged{Header: hdr(), Mode: protocol.ModeAct}))
	st.Apply(ev(protocol.TypeModeChanged, &protocol.ModeChanged{Header: hdr(), Mode: protocol.ModePlan,
		ChangedBy: &protocol.By{Device: protocol.OwnDevice, Client: protocol.ClientWindow}}))
	var marks []string
	for _, r := range st.Rows {
		if r.Kind == RowMode {
			marks = append(marks, r.Text)
		}
	}
	want := []string{
		"Switched to Plan by zebra-phone (web): every tool call is denied from the next tool call.",
		"Switched to Act: tool calls run from the next tool call.",
		"Switched to Plan: every tool call is denied from the next tool call.",
	}
	if strings.Join(marks, "\n") != strings.Join(want, "\n") {
		t.Fatalf("marks:\n%s\nwant:\n%s", strings.Join(marks, "\n"), strings.Join(want, "\n"))
	}
}
