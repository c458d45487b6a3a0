package main

import (
	"os"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// TestMain lets the test binary play the relay process, as the command does
// when it re-executes itself.
func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "relay" {
		store := os.Getenv("FANOUTBENCH_TEST_STORE")
		if s := os.Getenv(storeEnv); s != "" {
			store = s // the -compare relay
		}
		if err := runRelay(options{store: store, nats: "embedded", sync: "NORMAL"}); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A small run of the whole benchmark: it must deliver everything.
func TestSmallRun(t *testing.T) {
	for _, store := range []string{"memory", "sqlite", "jetstream"} {
		t.Run(store, func(t *testing.T) {
			t.Setenv("FANOUTBENCH_TEST_STORE", store)
			err := runBench(options{subscribers: 3, deltas: 200, size: 64, rounds: 1, pacedRate: 1000, idle: 5, store: store, nats: "embedded"})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The anchor (nats-server's core fan-out) runs after the relay's rounds
// and delivers everything too.
func TestSmallRunAnchor(t *testing.T) {
	if _, err := natstest.Binary(); err != nil {
		t.Skipf("nats-server is not installed (make nats-server): %v", err)
	}
	t.Setenv("FANOUTBENCH_TEST_STORE", "memory")
	if err := runBench(options{subscribers: 3, deltas: 200, size: 64, rounds: 1, store: "memory", anchor: true}); err != nil {
		t.Fatal(err)
	}
}

// -compare runs a second relay on SQLite, its rounds alternating with the
// JetStream relay's, and both deliver everything.
func TestSmallRunCompare(t *testing.T) {
	t.Setenv("FANOUTBENCH_TEST_STORE", "jetstream")
	err := runBench(options{subscribers: 3, deltas: 200, size: 64, rounds: 2, store: "jetstream", nats: "embedded", compare: "sqlite"})
	if err != nil {
		t.Fatal(err)
	}
	if err := runBench(options{subscribers: 3, deltas: 200, size: 64, rounds: 1, store: "sqlite", compare: "memory"}); err == nil {
		t.Error("-compare without -store jetstream was taken")
	}
}

// -replay writes and reads back a conversation on SQLite and on the
// 3-node cluster, checking every seq.
func TestSmallReplay(t *testing.T) {
	if err := runReplay(options{replay: 3000, size: 64, store: "sqlite", sync: "NORMAL"}); err != nil {
		t.Fatal(err)
	}
	if _, err := natstest.Binary(); err != nil {
		t.Skipf("nats-server is not installed (make nats-server): %v", err)
	}
	if err := runReplay(options{replay: 3000, size: 64, store: "jetstream", nats: "cluster", sync: "NORMAL"}); err != nil {
		t.Fatal(err)
	}
}

// -appends writes to a history of one stream and one of three on a 3-node
// cluster, rounds alternating, every append acknowledged.
func TestSmallAppends(t *testing.T) {
	if _, err := natstest.Binary(); err != nil {
		t.Skipf("nats-server is not installed (make nats-server): %v", err)
	}
	if err := runAppends(options{appends: 300 * time.Millisecond, streams: 3, rounds: 2, size: 64, natsSync: "always"}); err != nil {
		t.Fatal(err)
	}
	if err := runAppends(options{appends: time.Second, streams: 1, rounds: 1}); err == nil {
		t.Error("-appends with -streams 1 was taken")
	}
}
