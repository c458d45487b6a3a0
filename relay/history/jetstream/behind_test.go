package jetstream

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// TestAppendWaitsForALeaderBehind: an append refused because the subject's
// last message is one before what the writer stored and saw acknowledged
// was not refused by another writer (no writer moves a subject back): a
// node whose view is behind answered it (make chaos's node-partition,
// seeds 402 and 408: a stream leader cut off the network answered for a
// moment after the heal with the subject's last as at the cut, and the
// relay took its own running turns for another relay's and closed them
// "relay lost"). The append tries again until the stream agrees, and is
// stored; it was a history.ErrConflict. (The same holds when the leader's
// read shows the very message expected; one server cannot play that.)
func TestAppendWaitsForALeaderBehind(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	s := openEmbedded(t, nc, "behind", Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c", 2)}, Events: frames("c", 1, 2)}); err != nil {
		t.Fatal(err)
	}
	sh := s.shardOf("c")
	subject := sh.subjectOf("c")
	str, err := s.js.Stream(ctx, sh.stream)
	if err != nil {
		t.Fatal(err)
	}
	last, err := str.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	// The writer knows one message more than the leader holds: the next
	// one the stream will store, which the test stores below, late.
	cs, err := s.state("c")
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	cs.tail = last.Sequence + 1
	s.mu.Unlock()

	done := make(chan error, 1)
	go func() {
		done <- s.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("c", 3)}, Events: frames("c", 3, 3)})
	}()
	select {
	case err := <-done:
		t.Fatalf("the append did not wait for the leader to catch up: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	// The leader catches up: the message the writer knows is stored.
	catchUp := &nats.Msg{Subject: subject, Header: nats.Header{}, Data: last.Data}
	for k, v := range last.Header {
		if !strings.HasPrefix(k, "Nats-") {
			catchUp.Header[k] = v
		}
	}
	ack, err := s.js.PublishMsg(ctx, catchUp)
	if err != nil || ack.Sequence != last.Sequence+1 {
		t.Fatalf("the catch-up message: %+v, %v; want stream seq %d", ack, err, last.Sequence+1)
	}
	if err := <-done; err != nil {
		if errors.Is(err, history.ErrConflict) {
			t.Fatalf("the append was taken for another writer's conflict: %v", err)
		}
		t.Fatalf("the append after the leader caught up: %v", err)
	}
	if tail, err := str.GetLastMsgForSubject(ctx, subject); err != nil || tail.Sequence != last.Sequence+2 {
		t.Fatalf("the subject's last message: %v, %v; want the append at stream seq %d", tail, err, last.Sequence+2)
	}
}
