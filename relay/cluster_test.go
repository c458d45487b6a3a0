package relay_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// Several relays sharing conversations (docs/scale-out.md): two or three
// relays in this process, each with its own store and cluster membership,
// driven over real WebSockets. The tests of the relays' logic run on the
// in-memory cluster (relay/history/memcluster, no NATS) and on one
// in-process NATS node; those of what NATS does (a node dies, an ack is
// lost, the watches of the spend and the devices, an older relay's lease)
// on NATS alone, some also on a real 3-node nats-server cluster
// (natstest). relay/history/clustertest checks that the in-memory cluster
// and the JetStream one keep the same contract. The harness is in
// cluster_harness_test.go; an owner that dies or loses its lease in
// cluster_owner_test.go; what the store holds unseen in
// cluster_store_test.go.

// A subscriber on relay B gets every event of a turn relay A runs, with
// A's seqs, none twice; a late subscriber on B replays and joins live;
// B's list shows the conversation.
func TestClusterFanOut(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		_, bb, ca, cb, id := b.pairWith(t, "fan", shareLease)

		cb.Send("copilot:list", map[string]any{"watch": true})
		cb.Expect("copilot:conversations")
		subscribe(cb, id)
		if sub := cb.WaitFor("copilot:subscribed", nil); sub.Seq() != 0 {
			t.Fatalf("subscribed to a new conversation at seq %d", sub.Seq())
		}

		send(ca, id, "stream please")
		gotA := collect(t, ca, "copilot:idle", nil)
		seqA := eventSeqs(t, "A", gotA, 0)

		var gotB, listed []relaytest.Frame
		for {
			f := cb.Next()
			if f.Type == "copilot:conversation" {
				listed = append(listed, f) // the watched list, below
				continue
			}
			gotB = append(gotB, f)
			if f.Type == "copilot:idle" {
				break
			}
		}
		seqB := eventSeqs(t, "B", gotB, 0)
		if fmt.Sprint(seqA) != fmt.Sprint(seqB) {
			t.Fatalf("A saw seqs %v, B %v", seqA, seqB)
		}
		if n := countType(gotB, "copilot:delta"); n != 40 {
			t.Fatalf("B got %d deltas, want 40", n)
		}
		// The same bytes: B sends what A stored.
		rawA := map[int64]string{}
		for _, f := range gotA {
			rawA[f.Seq()] = string(f.Raw)
		}
		for _, f := range gotB {
			if f.Type != "copilot:subscribed" && rawA[f.Seq()] != string(f.Raw) {
				t.Fatalf("seq %d: A sent %s, B %s", f.Seq(), rawA[f.Seq()], f.Raw)
			}
		}
		if idle := gotB[len(gotB)-1]; idle.Field("status") != "completed" {
			t.Fatalf("B's idle %s", idle.Raw)
		}

		// A late subscriber on B, from seq 3: the rest, then subscribed.
		late := bb.srv.Dial(t)
		replayFrom(late, id, 3)
		gotLate := collect(t, late, "copilot:subscribed", nil)
		eventSeqs(t, "late", gotLate, 3)
		if sub := gotLate[len(gotLate)-1]; sub.Seq() != seqA[len(seqA)-1] || sub.Field("streaming") != false {
			t.Fatalf("late subscribed %s, want seq %d not streaming", sub.Raw, seqA[len(seqA)-1])
		}

		// B's watched list heard of it: streaming, then not.
		for !strings.Contains(string(listed[len(listed)-1].Raw), `"streaming":false`) {
			listed = append(listed, cb.WaitFor("copilot:conversation", nil))
		}
		if !strings.Contains(string(listed[0].Raw), `"streaming":true`) || !strings.Contains(string(listed[0].Raw), id) {
			t.Fatalf("B's watched list: first %s", listed[0].Raw)
		}

		// B's list shows it, as A's does.
		cb.Send("copilot:list", nil)
		list := cb.WaitFor("copilot:conversations", nil)
		if !strings.Contains(string(list.Raw), `"conversationId":"`+id+`"`) || !strings.Contains(string(list.Raw), `"title":"stream please"`) {
			t.Fatalf("B's list %s", list.Raw)
		}

		// A second turn from B runs at A, the owner: same conversation, seqs
		// go on.
		send(cb, id, "again")
		gotB2 := collect(t, cb, "copilot:idle", nil)
		var b2 []relaytest.Frame
		for _, f := range gotB2 {
			if f.Type != "copilot:conversation" {
				b2 = append(b2, f)
			}
		}
		eventSeqs(t, "B, second turn", b2, seqA[len(seqA)-1])
		gotA2 := collect(t, ca, "copilot:idle", nil)
		eventSeqs(t, "A, second turn", gotA2, seqA[len(seqA)-1])
		if um := gotA2[0]; um.Type != "copilot:user_message" || um.Field("content") != "again" {
			t.Fatalf("A got %s first", um.Raw)
		}
		// A ran the agent: its log says nothing of taking anything over.
		if strings.Contains(bb.logs.all(), "took a conversation over") {
			t.Fatal("B took over a conversation whose owner is alive")
		}

		// A delete from B: A deletes it, both relays' subscribers hear it.
		cb.Send("copilot:delete", map[string]any{"conversationId": id})
		if d := ca.WaitFor("copilot:deleted", nil); d.Field("conversationId") != id {
			t.Fatalf("A got %s", d.Raw)
		}
		cb.WaitFor("copilot:deleted", nil)
		// The id starts anew, from seq 1, whoever sends first.
		send(cb, id, "anew")
		um := cb.WaitFor("copilot:user_message", nil)
		if um.Seq() != 1 {
			t.Fatalf("the new conversation's first event: %s", um.Raw)
		}
		cb.WaitFor("copilot:idle", nil)
	})
}

// A question raised at A, answered from B: the agent gets the answer,
// A's clients get user_input_closed with who answered. A set_mode from B
// decides A's next permission.
func TestClusterQuestionAndModeFromAnotherRelay(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		_, _, ca, cb, id := b.pairWith(t, "q", shareLease)

		send(ca, id, "question")
		reqA := ca.WaitFor("copilot:user_input_request", nil)
		replayFrom(cb, id, 0)
		sub := cb.WaitFor("copilot:subscribed", nil)
		pending, _ := sub.Field("pendingInput").(map[string]any)
		if sub.Field("streaming") != true || pending == nil || pending["requestId"] != reqA.Field("requestId") {
			t.Fatalf("B's subscribed %s, want streaming with the open question", sub.Raw)
		}
		// An invalid answer from B gets A's error back.
		cb.Send("copilot:user_input_response", map[string]any{"conversationId": id, "requestId": reqA.Field("requestId"), "answer": "middle"})
		if e := cb.WaitFor("error", nil); e.Field("code") != "invalid_answer" {
			t.Fatalf("B got %s", e.Raw)
		}
		cb.Send("copilot:user_input_response", map[string]any{"conversationId": id, "requestId": reqA.Field("requestId"), "answer": "right"})
		closed := ca.WaitFor("copilot:user_input_closed", nil)
		if closed.Field("reason") != "answered" || closed.Field("requestId") != reqA.Field("requestId") {
			t.Fatalf("A got %s", closed.Raw)
		}
		gotA := collect(t, ca, "copilot:idle", nil)
		if !strings.Contains(fmt.Sprint(frameTexts(gotA)), "You said right.") {
			t.Fatalf("the agent did not get B's answer: %s", framesString(gotA))
		}
		cb.WaitFor("copilot:user_input_closed", nil)
		cb.WaitFor("copilot:idle", nil)

		// set_mode from B, while A's turn waits on a question: the tool
		// call after it is denied at A.
		ca.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "mode check", "mode": "act"})
		req := ca.WaitFor("copilot:user_input_request", nil)
		cb.Send("copilot:set_mode", map[string]any{"conversationId": id, "mode": "plan"})
		if mc := ca.WaitFor("copilot:mode_changed", nil); mc.Field("mode") != "plan" {
			t.Fatalf("A got %s", mc.Raw)
		}
		cb.Send("copilot:user_input_response", map[string]any{"conversationId": id, "requestId": req.Field("requestId"), "answer": "yes"})
		end := ca.WaitFor("copilot:tool_end", nil)
		if end.Field("denied") != true {
			t.Fatalf("the tool ran in plan mode: %s", end.Raw)
		}
		ca.WaitFor("copilot:idle", nil)
		if endB := cb.WaitFor("copilot:tool_end", nil); endB.Field("denied") != true {
			t.Fatalf("B got %s", endB.Raw)
		}
		// An abort from B of a conversation that is not streaming: A's
		// error, through B.
		cb.WaitFor("copilot:idle", nil)
		cb.Send("copilot:abort", map[string]any{"conversationId": id})
		if e := cb.WaitFor("error", nil); e.Field("code") != "not_streaming" {
			t.Fatalf("B got %s", e.Raw)
		}
		// A turn sent from B and aborted from B: it runs and stops at A.
		send(cb, id, "long")
		ca.WaitFor("copilot:delta", nil)
		cb.WaitFor("copilot:delta", nil)
		cb.Send("copilot:abort", map[string]any{"conversationId": id})
		wantIdle(t, ca, "A", "aborted")
		wantIdle(t, cb, "B", "aborted")
	})
}
