package reliability

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// crashScript streams a long reply (3,000 deltas, 10 ms apart) to any
// prompt, asks a question to a prompt with "question", and answers a prompt
// with "short" at once.
func crashScript() any {
	type step map[string]any
	long := []step{{"delta": "{{prompt}}: "}}
	for i := range 3000 {
		long = append(long, step{"sleep": "10ms"}, step{"delta": fmt.Sprintf("word%d ", i)})
	}
	return map[string]any{"turns": []any{
		map[string]any{"match": "question", "steps": []step{
			{"delta": "Before the question. "},
			{"ask": map[string]any{"question": "Which environment?", "choices": []string{"staging", "prod"}, "allowFreeform": false}},
			{"delta": "You said {{answer}}."},
		}},
		map[string]any{"match": "short", "steps": []step{{"delta": "Short reply."}}},
		map[string]any{"steps": long},
	}}
}

// TestCrashRecovery kills the relay binary with SIGKILL while one
// conversation streams and another waits on a question, restarts it on the
// same data dir, twice, and checks docs/protocol.md's Durability section:
// nothing a client saw is lost, a resuming client gets every remaining
// stored event once, the interrupted turn and question are closed by stored
// events, seq and epoch carry on, and a fresh data dir gets a new epoch.
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	const token = "crash-test-token-6f1d2c9a"
	args := []string{"--agent", "script", "--script", writeScript(t, crashScript()),
		"--data-dir", dataDir, "--listen", "127.0.0.1:0", "--token", token}

	stream, question, done := uuid.NewString(), uuid.NewString(), uuid.NewString()
	convs := []string{stream, question, done}

	p := startRelay(t, nil, args...)
	// Two windows: x sends, y watches. Both follow every conversation.
	x := newWatcher(t, "x", p.URL, token)
	y := newWatcher(t, "y", p.URL, token)
	var epoch string
	for _, conv := range convs {
		for _, w := range []*watcher{x, y} {
			sub := w.subscribe(conv, -1)
			if sub["seq"] != 0.0 || sub["streaming"] != false || sub["mode"] != "act" {
				t.Fatalf("new conversation: %v", sub)
			}
			if epoch == "" {
				epoch, _ = sub["epoch"].(string)
			}
			if sub["epoch"] != epoch || epoch == "" {
				t.Fatalf("epoch %v, want one non-empty epoch for the relay (%q)", sub["epoch"], epoch)
			}
		}
	}

	// A finished turn: it must come back as it was, with nothing added.
	x.cl.Send("copilot:send", map[string]any{"conversationId": done, "prompt": "short answer please"})
	idle := y.until("idle of the short turn", isType("copilot:idle", done))
	if idle.Field("status") != "completed" {
		t.Fatalf("short turn: %s", idle.Raw)
	}

	// An open question: a late subscriber sees it as pendingInput.
	x.cl.Send("copilot:send", map[string]any{"conversationId": question, "prompt": "a question for you"})
	req := y.until("the question", isType("copilot:user_input_request", question))
	requestID, _ := req.Field("requestId").(string)
	late := newWatcher(t, "late", p.URL, token)
	sub := late.subscribe(question, -1)
	if pi, _ := sub["pendingInput"].(map[string]any); pi == nil || pi["requestId"] != requestID {
		t.Fatalf("a late subscriber does not see the open question as pendingInput: %v", sub)
	}

	// The long stream, in plan mode: killed once y has 50 of its events.
	x.cl.Send("copilot:send", map[string]any{"conversationId": stream, "prompt": "stream until the crash", "mode": "plan"})
	y.until("50 events of the stream", func(relaytest.Frame) bool { return y.count(stream) >= 50 })

	killed := time.Now()
	p.kill()
	for _, w := range []*watcher{x, y, late} {
		w.drain()
	}
	saw := map[string]map[int64][]byte{}
	for _, conv := range convs {
		saw[conv] = seen(t, conv, x, y, late)
	}
	t.Logf("before the kill the clients saw seq %d of the stream, %d of the question, %d of the finished turn",
		maxSeq(saw[stream]), maxSeq(saw[question]), maxSeq(saw[done]))

	// Round 1: restart on the same data dir.
	p = startRelay(t, nil, args...)
	t.Logf("restarted on the same data dir %s after the SIGKILL", time.Since(killed).Round(time.Millisecond))
	r := newWatcher(t, "resumer", p.URL, token)

	streamSeq := checkResume(t, r, stream, maxSeq(saw[stream]), epoch, "plan", "")
	questionSeq := checkResume(t, r, question, maxSeq(saw[question]), epoch, "act", requestID)
	doneSeq := checkResume(t, r, done, maxSeq(saw[done]), epoch, "act", "")
	if doneSeq != maxSeq(saw[done]) {
		t.Errorf("the finished conversation grew from seq %d to %d across the restart", maxSeq(saw[done]), doneSeq)
	}
	checkHistory(t, p, token, stream, streamSeq, saw[stream], r.events[stream])
	checkHistory(t, p, token, question, questionSeq, saw[question], r.events[question])
	checkHistory(t, p, token, done, doneSeq, saw[done], nil)
	checkList(t, p, token, map[string]listEntry{
		stream:   {title: "stream until the crash", mode: "plan"},
		question: {title: "a question for you", mode: "act"},
		done:     {title: "short answer please", mode: "act"},
	})

	// The question of the dead turn can no longer be answered: the
	// response is ignored (no error, nothing changes).
	r.cl.Send("copilot:user_input_response", map[string]any{"conversationId": question, "requestId": requestID, "answer": "prod"})
	expectPong(t, r.cl, "answering a question closed by the restart")

	// The conversation goes on: seq continues with no gap.
	r.cl.Send("copilot:send", map[string]any{"conversationId": stream, "prompt": "stream again", "mode": "plan"})
	first := r.until("the new turn", isType("copilot:user_message", stream))
	if first.Seq() != streamSeq+1 {
		t.Fatalf("the first event after the restart has seq %d, want %d", first.Seq(), streamSeq+1)
	}
	y2 := newWatcher(t, "y2", p.URL, token)
	y2.subscribe(stream, streamSeq) // follows from the restart's idle on
	y2.until("50 events of the second stream", func(relaytest.Frame) bool { return y2.count(stream) >= 50 })

	// Round 2: killed again in the middle of the new turn.
	killed = time.Now()
	p.kill()
	r.drain()
	y2.drain()
	for _, conv := range []string{stream} {
		for seq, raw := range seen(t, conv, r, y2) {
			saw[conv][seq] = raw
		}
	}
	p = startRelay(t, nil, args...)
	t.Logf("restarted on the same data dir %s after the second SIGKILL", time.Since(killed).Round(time.Millisecond))
	r2 := newWatcher(t, "resumer2", p.URL, token)
	streamSeq = checkResume(t, r2, stream, maxSeq(saw[stream]), epoch, "plan", "")
	checkHistory(t, p, token, stream, streamSeq, saw[stream], r2.events[stream])
	// The question conversation was not touched in round 2.
	if seq := checkResume(t, r2, question, questionSeq, epoch, "act", ""); seq != questionSeq {
		t.Errorf("the question conversation grew from seq %d to %d in a restart where it was idle", questionSeq, seq)
	}

	// The question conversation can go on and be answered.
	r2.cl.Send("copilot:send", map[string]any{"conversationId": question, "prompt": "another question"})
	req = r2.until("the new question", isType("copilot:user_input_request", question))
	if req.Seq() != questionSeq+3 { // user_message, the delta before the question, the request
		t.Errorf("the new question has seq %d, want %d", req.Seq(), questionSeq+3)
	}
	r2.cl.Send("copilot:user_input_response", map[string]any{"conversationId": question, "requestId": req.Field("requestId"), "answer": "prod"})
	closed := r2.until("the closed question", isType("copilot:user_input_closed", question))
	if closed.Field("reason") != "answered" {
		t.Errorf("the answered question closed with %s", closed.Raw)
	}
	idle = r2.until("the end of the answered turn", isType("copilot:idle", question))
	if idle.Field("status") != "completed" {
		t.Errorf("the answered turn ended with %s", idle.Raw)
	}
	p.stop() // a clean stop this time

	// A fresh data dir is a new history: a new epoch, nothing listed.
	fresh := startRelay(t, nil, "--agent", "script", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--token", token)
	f := newWatcher(t, "fresh", fresh.URL, token)
	sub = f.subscribe(stream, 0)
	if sub["seq"] != 0.0 || sub["epoch"] == epoch || sub["epoch"] == "" {
		t.Errorf("on a fresh data dir: %v; want seq 0 and an epoch other than %q", sub, epoch)
	}
	checkList(t, fresh, token, nil)
	fresh.stop()
}

func isType(typ, conv string) func(relaytest.Frame) bool {
	return func(f relaytest.Frame) bool { return f.Type == typ && f.Field("conversationId") == conv }
}

// checkResume subscribes from the last seq the clients saw and checks what
// the restarted relay sends: every stored event after it, once and in
// order; if the turn was streaming, a closing copilot:user_input_closed
// (when a question with openRequest was open) and copilot:idle status
// error "relay restarted" last. It returns the conversation's seq.
func checkResume(t *testing.T, r *watcher, conv string, lastSeen int64, epoch, mode, openRequest string) int64 {
	t.Helper()
	before := r.count(conv)
	sub := r.subscribe(conv, lastSeen)
	seq := int64(sub["seq"].(float64))
	if sub["epoch"] != epoch {
		t.Errorf("%s: epoch %v after the restart, want %q (unchanged)", conv, sub["epoch"], epoch)
	}
	if sub["streaming"] != false {
		t.Errorf("%s: still streaming after the restart: %v", conv, sub)
	}
	if sub["mode"] != mode {
		t.Errorf("%s: mode %v after the restart, want %s", conv, sub["mode"], mode)
	}
	if _, ok := sub["pendingInput"]; ok {
		t.Errorf("%s: copilot:subscribed still carries pendingInput after the restart: %v", conv, sub)
	}
	// The watcher has checked order and uniqueness; here: what came.
	got := r.order[conv][before:]
	if int64(len(got)) != seq-lastSeen {
		t.Fatalf("%s: resumed from seq %d, got %d event(s) but the relay is at seq %d", conv, lastSeen, len(got), seq)
	}
	t.Logf("%s: resumed from seq %d: %d stored event(s) after it, the relay is at seq %d", conv, lastSeen, len(got), seq)
	if seq == lastSeen {
		return seq
	}
	lastRaw := r.events[conv][seq]
	idle := relaytest.Frame{Raw: lastRaw}
	_ = json.Unmarshal(lastRaw, &idle)
	switch {
	case idle.Type != "copilot:idle":
		t.Errorf("%s: the last stored event after the restart is %s, want copilot:idle", conv, lastRaw)
	case idle.Field("status") != "error" || idle.Field("message") != "relay restarted" && !strings.HasPrefix(fmt.Sprint(idle.Field("message")), "relay lost: "):
		// A relay of a cluster closes another's turn with "relay lost".
		t.Errorf("%s: the interrupted turn was closed with %s, want status error, message \"relay restarted\" (or \"relay lost: …\" on a cluster)", conv, lastRaw)
	}
	var closedReq string
	for _, s := range got {
		raw := r.events[conv][s]
		if typeOf(raw) == "copilot:user_input_closed" {
			f := relaytest.Frame{}
			_ = json.Unmarshal(raw, &f)
			if f.Field("reason") != "aborted" {
				t.Errorf("%s: the open question was closed with %s, want reason aborted", conv, raw)
			}
			closedReq, _ = f.Field("requestId").(string)
		}
	}
	if closedReq != openRequest {
		t.Errorf("%s: question closed by the restart: %q, want %q", conv, closedReq, openRequest)
	}
	return seq
}

// checkHistory replays the whole conversation from sinceSeq 0 on a new
// connection: seq 1…last, each once, and for every event a client received
// before the kill (saw) or after the restart (resumed), the same bytes.
//
// A replay from the middle (any later sinceSeq) gives the tail, the same
// bytes again.
func checkHistory(t *testing.T, p *relayProc, token, conv string, last int64, saw, resumed map[int64][]byte) {
	t.Helper()
	for _, since := range []int64{0, last / 2} {
		checkReplay(t, p, token, conv, since, last, saw, resumed)
	}
}

func checkReplay(t *testing.T, p *relayProc, token, conv string, since, last int64, saw, resumed map[int64][]byte) {
	t.Helper()
	h := newWatcher(t, "history", p.URL, token)
	sub := h.subscribe(conv, since)
	if int64(sub["seq"].(float64)) != last {
		t.Fatalf("%s: the history ends at seq %v, want %d", conv, sub["seq"], last)
	}
	if int64(h.count(conv)) != last-since {
		t.Fatalf("%s: replay from seq %d gave %d events, want %d", conv, since, h.count(conv), last-since)
	}
	for _, want := range []map[int64][]byte{saw, resumed} {
		for seq, raw := range want {
			if seq <= since {
				continue
			}
			if got := h.events[conv][seq]; string(got) != string(raw) {
				t.Errorf("%s seq %d: a client received\n  %s\nbut the history holds\n  %s", conv, seq, raw, got)
			}
		}
	}
	h.cl.Close()
}

type listEntry struct{ title, mode string }

// checkList checks copilot:list: exactly the conversations of want, with
// their titles and modes, none streaming.
func checkList(t *testing.T, p *relayProc, token string, want map[string]listEntry) {
	t.Helper()
	cl := relaytest.Dial(t, p.URL, token)
	cl.Send("copilot:list", nil)
	f := cl.Expect("copilot:conversations")
	var list struct {
		Conversations []struct {
			ConversationID string `json:"conversationId"`
			Title          string `json:"title"`
			Mode           string `json:"mode"`
			Streaming      bool   `json:"streaming"`
			UpdatedAt      string `json:"updatedAt"`
		} `json:"conversations"`
	}
	f.Decode(t, &list)
	if len(list.Conversations) != len(want) {
		t.Errorf("copilot:list has %d conversations, want %d: %s", len(list.Conversations), len(want), f.Raw)
	}
	for _, c := range list.Conversations {
		w, ok := want[c.ConversationID]
		switch {
		case !ok:
			t.Errorf("copilot:list has an unknown conversation: %+v", c)
		case c.Title != w.title || c.Mode != w.mode || c.Streaming || c.UpdatedAt == "":
			t.Errorf("copilot:list: %+v, want title %q, mode %s, not streaming, an updatedAt", c, w.title, w.mode)
		}
	}
	cl.Close()
}
