package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testbin"
)

// TestMain runs the test binary as a worker when run starts it as one
// (worker.go: a worker is a copy of the running program), and removes the
// pilotdesk binary testbin built.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-worker" {
		os.Exit(floodMain())
	}
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// The tool at a small scale against the real relay: 150 idle connections
// and 150 viewer connections from two addresses, then the owner with a
// 100 KB prompt. The full scale (20,000 and 10,000) is `make flood`, never
// a unit test.
func TestRunSmall(t *testing.T) {
	cfg := config{Bin: testbin.Build(t), Idle: 150, Viewers: 150, Prompt: 100_000, Addrs: 2, Conc: 20, OwnerWithin: 10 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := run(ctx, cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	res.print(testWriter{t}, cfg)
	if !res.OwnerOK(cfg) {
		t.Fatal("the owner did not connect and run its turn")
	}
	if res.IdleOpened+res.IdleFailed != cfg.Idle || res.IdleOpened == 0 {
		t.Errorf("idle connections: %d answered, %d failed, of %d", res.IdleOpened, res.IdleFailed, cfg.Idle)
	}
	// One viewer token holds at most 64 connections (relay.Config's
	// default); the others are refused or cut, never let in or lost.
	if n := res.ViewersOpen + res.ViewersLimit + res.ViewersCut + res.ViewersOther; n != cfg.Viewers || res.ViewersOpen == 0 || res.ViewersOpen > 64 || res.ViewersOther > 0 {
		t.Errorf("viewers: %d open, %d limit, %d cut, %d other %s", res.ViewersOpen, res.ViewersLimit, res.ViewersCut, res.ViewersOther, res.ViewerError)
	}
	if res.RelayRSS <= 0 || res.RelayFDs <= 0 {
		t.Errorf("the relay's figures: RSS %.1f MiB, %d files", res.RelayRSS, res.RelayFDs)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
