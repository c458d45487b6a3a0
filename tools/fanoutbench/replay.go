package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
)

// replayTarget is issue #15's: a 100,000-event conversation replays at
// 100,000 events/s or more.
const replayTarget = 100_000

// replayBatch is how many events one write carries, half of each
// conversation: what the committer groups under load.
const replayBatch = 500

// runReplay measures the store's replay (-replay N): N events of one
// conversation, stored interleaved 1:1 with another's in batches of 500,
// read back from seq 0 by a store opened afresh on the same history (as
// another relay, or the same one after a restart, would: nothing of the
// writer's is cached). SQLite first, in the same run, for comparison, then
// the -store asked for. Every event is checked: seqs 1…N, in order, once;
// an error is a wrong replay, a missed target is only printed (MISSED), as
// every target of make bench is.
func runReplay(o options) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	stores := []string{"sqlite"}
	if o.store == "jetstream" {
		if o.nats == "cluster" {
			stop, err := startCluster()
			if err != nil {
				return err
			}
			defer stop()
		}
		stores = append(stores, "jetstream")
	}
	fmt.Printf("replay: a conversation of %d events (delta frames of %d B of text) stored interleaved 1:1 with another, in writes of %d events; read from seq 0 by a store opened afresh; load average %s\n",
		o.replay, o.size, replayBatch, loadAverage())
	for _, name := range stores {
		open, label, err := replayStore(o, name, logger)
		if err != nil {
			return err
		}
		wrote, took, n, err := replayOnce(open, o.replay, o.size)
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		rate := float64(n) / took.Seconds()
		verdict := "met"
		if rate < replayTarget {
			verdict = "MISSED"
		}
		fmt.Printf("replay %-28s %7d events in %8s = %10.0f events/s (target >= %d/s: %s); written in %s\n",
			label, n, took.Round(100*time.Microsecond), rate, replayTarget, verdict, wrote.Round(time.Millisecond))
	}
	return nil
}

// replayStore returns a function that opens the store named (each call a
// new store on the same history: for JetStream a new connection) and its
// label.
func replayStore(o options, name string, logger *slog.Logger) (open func() (history.Store, func(), error), label string, err error) {
	switch name {
	case "sqlite":
		dir, err := os.MkdirTemp("", "fanoutbench-replay-*")
		if err != nil {
			return nil, "", err
		}
		return func() (history.Store, func(), error) {
			st, err := sqlite.Open(context.Background(), dir, sqlite.Options{Synchronous: o.sync, Logger: logger})
			if err != nil {
				return nil, nil, err
			}
			return st, func() { st.Close() }, nil
		}, "SQLite (" + o.sync + ")", nil
	case "jetstream":
		if o.nats != "cluster" {
			return nil, "", fmt.Errorf("-replay measures JetStream on the 3-node cluster (-nats cluster), not %q", o.nats)
		}
		label := "JetStream, 3 nodes, R3"
		return func() (history.Store, func(), error) { return openJetStream(o, logger) }, label, nil
	}
	return nil, "", fmt.Errorf("-store %q", name)
}

// replayOnce writes n events of conversation "long" interleaved with as
// many of "other", then times a fresh store's replay of "long" from 0.
func replayOnce(open func() (history.Store, func(), error), n, size int) (wrote, took time.Duration, got int, err error) {
	ctx := context.Background()
	w, closeW, err := open()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("open: %w", err)
	}
	content := strings.Repeat("x", size)
	frame := func(id string, seq int64) history.Event {
		return history.Event{ConversationID: id, Seq: seq, Type: "copilot:delta",
			Frame: fmt.Appendf(nil, `{"type":"copilot:delta","data":{"conversationId":%q,"seq":%d,"messageId":"m","content":%q}}`, id, seq, content)}
	}
	created := time.Now()
	start := time.Now()
	for seq := int64(1); seq <= int64(n); {
		last := min(seq+replayBatch/2-1, int64(n))
		var b history.Batch
		for _, id := range []string{"long", "other"} {
			b.Conversations = append(b.Conversations, history.Conversation{ID: id, Title: "replay", Mode: "act",
				CreatedAt: created, UpdatedAt: time.Now(), LastSeq: last})
			for s := seq; s <= last; s++ {
				b.Events = append(b.Events, frame(id, s))
			}
		}
		if err := w.Write(ctx, b); err != nil {
			closeW()
			return 0, 0, 0, fmt.Errorf("write seqs %d-%d: %w", seq, last, err)
		}
		seq = last + 1
	}
	wrote = time.Since(start)
	closeW()

	r, closeR, err := open()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("open afresh: %w", err)
	}
	defer closeR()
	next := int64(1)
	start = time.Now()
	err = r.Events(ctx, "long", 0, func(e history.Event) error {
		if e.Seq != next {
			return fmt.Errorf("the replay gave seq %d, want %d", e.Seq, next)
		}
		next++
		return nil
	})
	took = time.Since(start)
	got = int(next - 1)
	if err == nil && got != n {
		err = fmt.Errorf("the replay ended at seq %d of %d", got, n)
	}
	return wrote, took, got, err
}
