package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
)

// runMoveStreams spreads a history on NATS made with one event stream over
// --nats-streams streams (jetstream.MoveStreams), with every relay stopped:
// pilotdesk move-streams --nats URLS --nats-streams N (docs/operations.md,
// Several event streams).
func runMoveStreams(ctx context.Context, args []string, env Env) error {
	fs := flag.NewFlagSet("move-streams", flag.ContinueOnError)
	n := natsSettings{Lease: 15 * time.Second}
	n.registerConnection(fs, env.Getenv, "the NATS cluster of the history, at these `URLS` (comma-separated)", "replicas of the new streams")
	fs.IntVar(&n.Streams, "nats-streams", 0, "the `N` streams to spread the history over (2 to 64), which every relay is then started with")
	if err := parseFlags(fs, args, env.Stdout); err != nil {
		return err
	}
	switch {
	case n.URLs == "" || n.URLs == natsEmbedded:
		return usageError("move-streams needs --nats URLS: the cluster of a history made with one stream")
	case n.Streams < 2 || n.Streams > jetstream.MaxStreams:
		return usageError("move-streams needs --nats-streams 2 to %d, not %d", jetstream.MaxStreams, n.Streams)
	}
	if err := n.validate(""); err != nil {
		return err
	}
	logger := newLogger(env.Stderr, slog.LevelWarn)
	nc, err := connectNATS(n, "pilotdesk move-streams", logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	rep, err := jetstream.MoveStreams(ctx, nc, jetstream.Options{Replicas: n.Replicas, Streams: n.Streams, Logger: logger})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "moved %d conversations (%d messages) to their streams; %d stay in PD_EVENTS; start every relay with --nats-streams %d\n",
		rep.Conversations, rep.Messages, rep.Stayed, n.Streams)
	return nil
}
