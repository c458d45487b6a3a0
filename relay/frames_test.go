package relay_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
)

// mixedText is n bytes or so of text that grows when encoded: quotes,
// backslashes, newlines, U+2028, multi-byte runes, and <, > and & (which
// protocol.Encode leaves as they are).
func mixedText(n int) string {
	const unit = "a\"b\\c\nd\u2028é😀<>&\t"
	return strings.Repeat(unit, n/len(unit)+1)
}

// untilFrame reads frames, checking that none is over the limit, until one
// of msgType for which match (nil: any) is true.
func untilFrame(t *testing.T, cl *relaytest.Client, msgType string, match func(relaytest.Frame) bool) (relaytest.Frame, []relaytest.Frame) {
	t.Helper()
	f, skipped := cl.WaitForCollect(msgType, match)
	for _, s := range append(skipped, f) {
		if len(s.Raw) > protocol.MaxFrameBytes {
			t.Fatalf("a %s frame of %d bytes left the relay, over the %d-byte limit", s.Type, len(s.Raw), protocol.MaxFrameBytes)
		}
	}
	return f, skipped
}

// joinDeltas joins the content of the deltas of message id among frames.
func joinDeltas(t *testing.T, frames []relaytest.Frame, id string) (string, int) {
	t.Helper()
	var b strings.Builder
	n := 0
	for _, f := range frames {
		if f.Type == "copilot:delta" && f.Field("messageId") == id {
			var d protocol.Delta
			f.Decode(t, &d)
			b.WriteString(d.Content)
			n++
		}
	}
	return b.String(), n
}

// No frame over 1 MiB leaves the relay, whatever the agent sends: a long
// delta is split on UTF-8 boundaries into deltas that join to the same
// text; a message too long for a frame is marked truncated, with no
// content, after deltas that carry all its text; a long tool result, tool
// arguments, error, question or usage are shortened, saying so.
func TestNoFrameOverLimit(t *testing.T) {
	parallel(t)
	e := start(t, nil)
	cl, _ := e.subscribe("big")
	ft := e.startTurn(cl, "big", "go", nil)

	// One delta of 1.5 MiB that grows when encoded.
	long := mixedText(3 << 19)
	ft.delta("m1", long)
	// 48 deltas of 64 KiB, then the 3 MiB message they make.
	chunk := strings.Repeat("x", 64<<10)
	for range 48 {
		ft.delta("m2", chunk)
	}
	ft.Host.Emit(session.Message{MessageID: "m2", Content: strings.Repeat(chunk, 48)})
	// A 3 MiB message that was never streamed.
	whole := mixedText(3 << 20)
	ft.Host.Emit(session.Message{MessageID: "m3", Content: whole})
	// A tool with 2 MiB of arguments and a 2 MiB result.
	args, _ := json.Marshal(map[string]string{"command": strings.Repeat("echo hi; ", 2<<20/9)})
	ft.Host.Emit(session.ToolStart{ToolCallID: "t1", ToolName: "bash", Arguments: args})
	ft.Host.Emit(session.ToolEnd{ToolCallID: "t1", Success: true, Result: mixedText(2 << 20)})
	// Usage with a 2 MiB snapshot object.
	snaps, _ := json.Marshal(map[string]string{"junk": strings.Repeat("q", 2<<20)})
	ft.Host.Emit(session.Usage{Model: "m", QuotaSnapshots: snaps})
	// A 2 MiB question; a late subscriber gets it as pendingInput.
	ask := ft.ask(session.InputRequest{Question: mixedText(2 << 20), Choices: []string{"yes", "no"}})
	req, frames := untilFrame(t, cl, "copilot:user_input_request", nil)

	got, n := joinDeltas(t, frames, "m1")
	if got != long || n < 2 {
		t.Errorf("the 1.5 MiB delta came as %d deltas of %d bytes in all, want several joining to the %d bytes sent", n, len(got), len(long))
	}
	if got, n := joinDeltas(t, frames, "m2"); len(got) != 48*len(chunk) || n < 48 {
		t.Errorf("message m2: %d deltas of %d bytes", n, len(got))
	}
	var msgs []protocol.Message
	for _, f := range frames {
		if f.Type == "copilot:message" {
			var m protocol.Message
			f.Decode(t, &m)
			msgs = append(msgs, m)
		}
	}
	if len(msgs) != 2 || !msgs[0].Truncated || msgs[0].Content != "" || !msgs[1].Truncated || msgs[1].Content != "" {
		t.Errorf("the 3 MiB messages: %+v, want both truncated with no content", msgs)
	}
	if got, _ := joinDeltas(t, frames, "m3"); got != whole {
		t.Errorf("the message sent whole without deltas: its deltas carry %d bytes, want all %d", len(got), len(whole))
	}
	for _, f := range frames {
		switch f.Type {
		case "copilot:tool_start":
			var d protocol.ToolStart
			f.Decode(t, &d)
			if !strings.Contains(string(d.Arguments), "over the 1048576-byte frame limit") {
				t.Errorf("tool arguments: %.200s", d.Arguments)
			}
		case "copilot:tool_end":
			var d protocol.ToolEnd
			f.Decode(t, &d)
			if !strings.HasSuffix(d.Result, "over the 1048576-byte frame limit]") || len(d.Result) < 512<<10 {
				t.Errorf("tool result of %d bytes ends %q", len(d.Result), d.Result[max(0, len(d.Result)-80):])
			}
		case "copilot:quota":
			if s := string(f.Data); !strings.Contains(s, `"quotaSnapshots":{}`) {
				t.Errorf("quota: %.200s", s)
			}
		}
	}
	var q protocol.UserInputRequest
	req.Decode(t, &q)
	if !strings.Contains(q.Question, "truncated by the relay") || len(q.Choices) != 2 {
		t.Errorf("question of %d bytes, choices %v", len(q.Question), q.Choices)
	}
	late := e.dial()
	late.Send("copilot:subscribe", map[string]any{"conversationId": "big"})
	sub, _ := untilFrame(t, late, "copilot:subscribed", nil)
	if sub.Field("pendingInput") == nil {
		t.Errorf("the late subscriber has no pendingInput: %.300s", sub.Raw)
	}
	cl.Send("copilot:user_input_response", map[string]any{"conversationId": "big", "requestId": q.RequestID, "answer": "yes"})
	waitAsk(t, ask)

	// The turn fails with a 2 MiB reason.
	ft.finish(errorString(mixedText(2 << 20)))
	errFrame, _ := untilFrame(t, cl, "copilot:error", nil)
	if m, _ := errFrame.Field("message").(string); !strings.Contains(m, "truncated by the relay") {
		t.Errorf("copilot:error of %d bytes", len(errFrame.Raw))
	}
	untilFrame(t, cl, "copilot:idle", nil)

	// A replay from the start holds the same frames, all within the limit.
	re := e.dial()
	re.Send("copilot:subscribe", map[string]any{"conversationId": "big", "sinceSeq": 0})
	_, replayed := untilFrame(t, re, "copilot:subscribed", nil)
	if got, _ := joinDeltas(t, replayed, "m1"); got != long {
		t.Errorf("replay: the long delta joins to %d bytes", len(got))
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// A prompt whose copilot:user_message would not fit in a frame gets
// too_large and starts nothing. One of 1,000,000 '<' fits: they are not
// escaped.
func TestSendPromptTooLargeToEcho(t *testing.T) {
	parallel(t)
	e := start(t, nil)
	cl := e.dial()
	// 300,000 U+2028 are 900,000 bytes in the frame and six bytes each,
	// 1.8 MB, in the echo.
	// (Raw: json.Marshal would escape them.)
	cl.SendRaw([]byte(`{"type":"copilot:send","data":{"conversationId":"p","prompt":"` + strings.Repeat("\u2028", 300000) + `x"}}`))
	f := cl.Expect("error")
	m := dataMap(t, f)
	if m["code"] != protocol.CodeTooLarge || m["type"] != protocol.TypeSend || m["conversationId"] != "p" {
		t.Fatalf("got %s, want too_large for the send", f.Raw)
	}
	expectQuiet(t, cl)
	if n := len(e.agent.openCalls()); n != 0 {
		t.Fatalf("the prompt reached the agent")
	}
	cl.Send("copilot:list", nil)
	if convs := cl.Expect("copilot:conversations").Field("conversations").([]any); len(convs) != 0 {
		t.Fatalf("the refused send made a conversation: %v", convs)
	}

	prompt := strings.Repeat("<", 1000000)
	cl.SendRaw([]byte(`{"type":"copilot:send","data":{"conversationId":"p","prompt":"` + prompt + `"}}`))
	um := cl.WaitFor("copilot:user_message", nil)
	if len(um.Raw) > protocol.MaxFrameBytes || um.Field("content") != prompt {
		t.Fatalf("user_message of %d bytes", len(um.Raw))
	}
	e.agent.nextTurn(t).finish(nil)
	cl.WaitFor("copilot:idle", nil)
}

// Frames that an older relay stored over the limit are shortened in a
// replay, keeping their seq: the clients that resume into them no longer
// drop the connection on them forever.
func TestReplayShortensOldFrames(t *testing.T) {
	parallel(t)
	st := history.NewMemory()
	id := "old"
	enc := func(typ string, data any) []byte {
		b, err := protocol.Encode(typ, data)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	big := strings.Repeat("y", 3<<20)
	events := []history.Event{
		{ConversationID: id, Seq: 1, Type: protocol.TypeUserMessage, Frame: enc(protocol.TypeUserMessage, &protocol.UserMessage{Header: protocol.Header{ConversationID: id, Seq: 1}, MessageID: "u", Content: "hi", Mode: protocol.ModeAct})},
		{ConversationID: id, Seq: 2, Type: protocol.TypeDelta, Frame: enc(protocol.TypeDelta, &protocol.Delta{Header: protocol.Header{ConversationID: id, Seq: 2}, MessageID: "m", Content: big})},
		{ConversationID: id, Seq: 3, Type: protocol.TypeMessage, Frame: enc(protocol.TypeMessage, &protocol.Message{Header: protocol.Header{ConversationID: id, Seq: 3}, MessageID: "m", Content: big})},
		{ConversationID: id, Seq: 4, Type: protocol.TypeIdle, Frame: enc(protocol.TypeIdle, &protocol.Idle{Header: protocol.Header{ConversationID: id, Seq: 4}, Status: protocol.StatusCompleted})},
	}
	now := time.Now()
	if err := st.Write(context.Background(), history.Batch{Events: events, Conversations: []history.Conversation{{ID: id, Title: "hi", Mode: "act", CreatedAt: now, UpdatedAt: now, LastSeq: 4}}}); err != nil {
		t.Fatal(err)
	}
	e := start(t, func(c *relay.Config) { c.Store = st })
	cl := e.dial()
	cl.Send("copilot:subscribe", map[string]any{"conversationId": id, "sinceSeq": 0})
	sub, frames := untilFrame(t, cl, "copilot:subscribed", nil)
	if len(frames) != 4 || sub.Seq() != 4 {
		t.Fatalf("replayed %s then %s", framesString(frames), sub.Raw)
	}
	for i, f := range frames {
		if f.Seq() != int64(i+1) {
			t.Errorf("frame %d has seq %d", i, f.Seq())
		}
	}
	if c, _ := frames[1].Field("content").(string); !strings.HasPrefix(c, "yyyy") || !strings.Contains(c, "truncated by the relay") {
		t.Errorf("the old delta: %.100s", frames[1].Raw)
	}
	if frames[2].Field("truncated") != true || frames[2].Field("content") != "" {
		t.Errorf("the old message: %.200s", frames[2].Raw)
	}
}
