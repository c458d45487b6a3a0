package cli

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// TestMoveStreamsCommand: pilotdesk move-streams spreads a history made
// with one stream over three, after which a store of three streams reads
// every conversation; without --nats-streams it is a usage error.
func TestMoveStreamsCommand(t *testing.T) {
	c := natstest.Start(t, 1)
	env := map[string]string{natsPasswordEnv: c.Password}
	natsURL := fmt.Sprintf("nats://%s@127.0.0.1:%d", url.User(c.User), c.Nodes[0].ClientPort)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := c.Connect(0)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	old, err := jetstream.Open(ctx, nc, jetstream.Options{Replicas: 1, Streams: 1})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 6 {
		id := fmt.Sprintf("c%d", i)
		ids = append(ids, id)
		ev := history.Event{ConversationID: id, Seq: 1, Type: "copilot:delta", Frame: []byte(`{"type":"copilot:delta","seq":1}`)}
		if err := old.Write(ctx, history.Batch{Conversations: []history.Conversation{{ID: id, Title: id, LastSeq: 1, UpdatedAt: time.Now()}}, Events: []history.Event{ev}}); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	if code, _, stderr := runCLIEnv(t, ctx, env, "move-streams", "--nats", natsURL); code != 2 || !strings.Contains(stderr, "--nats-streams 2 to 64") {
		t.Fatalf("without --nats-streams: %d %s", code, stderr)
	}
	code, out, stderr := runCLIEnv(t, ctx, env, "move-streams", "--nats", natsURL, "--nats-streams", "3", "--nats-replicas", "1")
	if code != 0 || !strings.Contains(out, "start every relay with --nats-streams 3") {
		t.Fatalf("move-streams: %d %s %s", code, out, stderr)
	}
	s, err := jetstream.Open(ctx, nc, jetstream.Options{Replicas: 1, Streams: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range ids {
		n := 0
		if err := s.Events(ctx, id, 0, func(history.Event) error { n++; return nil }); err != nil || n != 1 {
			t.Fatalf("%s after the move: %d events, %v", id, n, err)
		}
	}
}
