package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/clustertest"
	"github.com/pilotdesk/pilotdesk/relay/history/historytest"
)

// streamsEnv runs this package's tests on histories spread over that many
// streams (PILOTDESK_NATS_STREAMS=3 go test …): every store a test opens
// without a count of its own gets it. The sharded cases below run in
// every make test whatever it says.
const streamsEnv = "PILOTDESK_NATS_STREAMS"

// testStreams is the count of streams a test's stores ask for when the
// test names none.
func testStreams(t *testing.T) int {
	t.Helper()
	v := os.Getenv(streamsEnv)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a count of streams", streamsEnv, v)
	}
	return n
}

// withStreams gives opts the count of streams of the run, unless it has one.
func withStreams(t *testing.T, opts Options) Options {
	t.Helper()
	if opts.Streams == 0 {
		opts.Streams = testStreams(t)
	}
	return opts
}

// TestShardedConformance runs the history conformance suite, and the
// relays' cluster suite, on histories of 3 streams on one in-process node.
func TestShardedConformance(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	n := 0
	t.Run("history", func(t *testing.T) {
		historytest.Run(t, func(t *testing.T) history.Store {
			n++
			s, err := Open(context.Background(), nc, Options{Replicas: 1, Streams: 3, Namespace: fmt.Sprintf("s%d", n)})
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	})
	t.Run("cluster", func(t *testing.T) {
		clustertest.Run(t, func(t *testing.T) clustertest.NewMember {
			node, err := StartEmbedded(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(node.Shutdown)
			return conformanceMemberStreams(1, 3, func(t *testing.T, i int) (*nats.Conn, error) {
				return node.Connect(fmt.Sprintf("relay %d", i))
			})
		})
	})
}

// TestStreamsLayout: a history's count of streams is fixed by the first
// store that opens it; a store asking for another is refused, naming both,
// one asking for none takes it; conversations land in several streams and
// every store reads, lists and deletes them wherever they are; a history
// made with one stream (messages in PD_EVENTS, no layout written) is not
// spread over several.
func TestStreamsLayout(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	ctx := context.Background()
	a := openEmbedded(t, nc, "layout", Options{Streams: 3})
	if len(a.shards) != 3 {
		t.Fatalf("%d streams, want 3", len(a.shards))
	}
	_, err := Open(ctx, nc, Options{Replicas: 1, Namespace: "layout", Streams: 2})
	if !errors.Is(err, ErrLayout) || !regexp.MustCompile(`spread over 3 streams.*asks for 2.*--nats-streams 3`).MatchString(err.Error()) {
		t.Fatalf("a store asking for 2 streams of a history of 3: %v, want ErrLayout naming both", err)
	}
	var ids []string
	used := map[int]bool{}
	for i := 0; len(used) < 3; i++ {
		id := fmt.Sprintf("conv-%d", i)
		ids = append(ids, id)
		used[shardIndex(id, 3)] = true
	}
	for _, id := range ids {
		if err := a.Write(ctx, history.Batch{Conversations: []history.Conversation{meta(id, 4)}, Events: frames(id, 1, 4)}); err != nil {
			t.Fatal(err)
		}
	}
	// Each stream holds its conversations' messages, none of the others'.
	for k, sh := range a.shards {
		info, err := sh.st.Info(ctx, jetstream.WithSubjectFilter(sh.subject))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			_, has := info.State.Subjects[sh.subjectOf(id)]
			if has != (shardIndex(id, 3) == k) {
				t.Errorf("stream %s has %q: %v, its hash says stream %d", sh.stream, id, has, shardIndex(id, 3))
			}
		}
		if info.State.Msgs == 0 {
			t.Errorf("stream %s holds nothing", sh.stream)
		}
	}
	b, err := Open(ctx, nc, Options{Replicas: 1, Namespace: "layout"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(b.shards) != 3 || b.Epoch() != a.Epoch() {
		t.Fatalf("a store asking for no count: %d streams, epoch %s; want 3 and %s", len(b.shards), b.Epoch(), a.Epoch())
	}
	cs, err := b.Conversations(ctx)
	if err != nil || len(cs) != len(ids) {
		t.Fatalf("Conversations: %d, %v; want %d", len(cs), err, len(ids))
	}
	for _, id := range ids {
		sameEvents(t, readEvents(t, b, id, 1), frames(id, 2, 4))
	}
	if err := b.Delete(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	c := openEmbedded(t, nc, "layout", Options{Streams: 3})
	if got := readEvents(t, c, ids[1], 0); len(got) != 0 {
		t.Fatalf("deleted %q still has %d events", ids[1], len(got))
	}
	if cs, err := c.Conversations(ctx); err != nil || len(cs) != len(ids)-1 {
		t.Fatalf("Conversations after a delete: %d, %v; want %d", len(cs), err, len(ids)-1)
	}

	// A history of one stream, made before there were several.
	old := openEmbedded(t, nc, "old", Options{Streams: 1})
	if err := old.Write(ctx, history.Batch{Conversations: []history.Conversation{meta("x", 2)}, Events: frames("x", 1, 2)}); err != nil {
		t.Fatal(err)
	}
	if err := old.kv.Delete(ctx, layoutKey); err != nil { // as an older relay left it
		t.Fatal(err)
	}
	_, err = Open(ctx, nc, Options{Replicas: 1, Namespace: "old", Streams: 3})
	if !errors.Is(err, ErrLayout) || !regexp.MustCompile(`PD_EVENTS_old holds \d+ messages of a history made with one stream`).MatchString(err.Error()) {
		t.Fatalf("3 streams on a history of one: %v, want ErrLayout", err)
	}
	again := openEmbedded(t, nc, "old", Options{Streams: 1})
	sameEvents(t, readEvents(t, again, "x", 0), frames("x", 1, 2))
}

// TestMoveStreams: a history made with one stream, spread over three by
// MoveStreams with no relay running: every conversation's events read back
// the same from the stream its hash names (a big frame in pieces and an
// atomic batch of many packs among them), the first stream keeps only its
// own, the list has every one once, the fence goes on from the copies, and
// a relay asking for one stream is refused afterwards. A move is refused
// while a relay holds a lease.
func TestMoveStreams(t *testing.T) {
	_, nc := embedded(t)
	ctx := context.Background()
	old := openEmbedded(t, nc, "mv", Options{Streams: 1})
	want := map[string][]history.Event{}
	for i := range 9 {
		id := fmt.Sprintf("conv-%d", i)
		evs := frames(id, 1, 6)
		switch i {
		case 1:
			evs[2].Frame = bytes.Repeat([]byte("x"), 3*old.chunk/2) // a frame in two messages
		case 2:
			for j := range evs {
				evs[j].Frame = bytes.Repeat([]byte{'a' + byte(j)}, 30<<10) // packs of 64 KiB: an atomic batch
			}
		}
		if err := old.Write(ctx, history.Batch{Conversations: []history.Conversation{meta(id, 6)}, Events: evs}); err != nil {
			t.Fatal(err)
		}
		want[id] = evs
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	relays, err := old.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: old.names.extraBucket("pd_relays")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := relays.Put(ctx, "r1", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := MoveStreams(ctx, nc, Options{Replicas: 1, Namespace: "mv", Streams: 3}); err == nil || !strings.Contains(err.Error(), "stop every relay first") {
		t.Fatalf("a move with a relay running: %v", err)
	}
	if err := relays.Delete(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	rep, err := MoveStreams(ctx, nc, Options{Replicas: 1, Namespace: "mv", Streams: 3})
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for id := range want {
		if shardIndex(id, 3) != 0 {
			moved++
		}
	}
	if rep.Conversations != moved || rep.Stayed != len(want)-moved || moved == 0 {
		t.Fatalf("moved %+v; want %d moved, %d stayed", rep, moved, len(want)-moved)
	}

	s := openEmbedded(t, nc, "mv", Options{Streams: 3})
	for id, evs := range want {
		sameEvents(t, readEvents(t, s, id, 0), evs)
	}
	info, err := s.shards[0].st.Info(ctx, jetstream.WithSubjectFilter(s.shards[0].subject))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.State.Subjects) != len(want)-moved {
		t.Fatalf("the first stream holds %d conversations; want the %d its hash names", len(info.State.Subjects), len(want)-moved)
	}
	cs, err := s.Conversations(ctx)
	if err != nil || len(cs) != len(want) {
		t.Fatalf("Conversations after the move: %d, %v; want %d", len(cs), err, len(want))
	}
	for id := range want {
		if err := s.Write(ctx, history.Batch{Events: frames(id, 7, 7)}); err != nil {
			t.Fatalf("append to %q after the move: %v", id, err)
		}
	}
	if _, err := Open(ctx, nc, Options{Replicas: 1, Namespace: "mv", Streams: 1}); !errors.Is(err, ErrLayout) {
		t.Fatalf("one stream after the move: %v, want ErrLayout", err)
	}
}
