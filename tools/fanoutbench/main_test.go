package main

import (
	"os"
	"testing"
)

// TestMain lets the test binary play the relay process, as the command does
// when it re-executes itself.
func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "relay" {
		store := os.Getenv("FANOUTBENCH_TEST_STORE")
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
