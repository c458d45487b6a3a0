// Command flood runs issue #33's denial-of-service attack on the owner at
// full scale against the real `pilotdesk serve` (the scripted agent, SQLite
// history in a temp data dir): it opens -idle keep-alive HTTP connections
// (one GET /healthz each, then silence) and -viewers WebSocket connections
// with a viewer token, keeps them all open, and then connects as the owner
// and runs a prompt of -prompt bytes. It prints what the relay let in and
// closed, how long the owner took to connect and to get its turn's end,
// and the relay's memory and file descriptors; it exits 1 when the owner
// did not connect within -owner-within or its turn did not complete.
//
//	go build -tags ci -o /tmp/pilotdesk . && go run ./tools/flood -bin /tmp/pilotdesk
//
// Connections come from -addrs loopback addresses (127.0.0.1, 127.0.0.2,
// …), round robin: one address is the attack issue #33 made; more spread
// it past the relay's limits per address. The tool raises its open-file
// limit (RLIMIT_NOFILE) as far as it may, and the relay it starts
// inherits it; the connections' own ends are held by worker processes,
// copies of this program, 15,000 each. See docs/reliability.md for the
// figures of a run.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// config is the run's settings, one per flag.
type config struct {
	Bin         string
	Idle        int
	Viewers     int
	Prompt      int
	Addrs       int
	Conc        int
	OwnerWithin time.Duration
	Keep        bool
	JSON        bool
}

func main() { os.Exit(floodMain()) }

func floodMain() int {
	var cfg config
	flag.StringVar(&cfg.Bin, "bin", "./pilotdesk", "the pilotdesk binary to run as the relay (`go build -tags ci -o pilotdesk .`)")
	flag.IntVar(&cfg.Idle, "idle", 20_000, "idle keep-alive HTTP connections: one GET /healthz each, then nothing")
	flag.IntVar(&cfg.Viewers, "viewers", 10_000, "WebSocket connections with one viewer token")
	flag.IntVar(&cfg.Prompt, "prompt", 100_000, "bytes of the owner's prompt")
	flag.IntVar(&cfg.Addrs, "addrs", 1, "loopback source addresses the connections come from (127.0.0.1 up)")
	flag.IntVar(&cfg.Conc, "concurrency", 200, "connections opened at once")
	flag.DurationVar(&cfg.OwnerWithin, "owner-within", time.Second, "the owner must connect (upgrade and a pong) within this")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the temp dir (data dir, relay log)")
	flag.BoolVar(&cfg.JSON, "json", false, "print the result as JSON")
	// A worker holds part of the connections (worker.go); run starts them.
	workerKind := flag.String("worker", "", "internal: run as a worker holding idle or viewers connections")
	workerFrom := flag.Int("worker-from", 0, "internal: the worker's first connection's index")
	workerN := flag.Int("worker-n", 0, "internal: the worker's connections")
	workerAddr := flag.String("worker-addr", "", "internal: the relay's address")
	flag.Parse()
	if *workerKind != "" {
		if err := workerMain(*workerKind, *workerFrom, *workerN, *workerAddr, cfg.Addrs, cfg.Conc); err != nil {
			fmt.Fprintf(os.Stderr, "flood worker: %v\n", err)
			return 1
		}
		return 0
	}
	if cfg.Idle < 0 || cfg.Viewers < 0 || cfg.Prompt < 1 || cfg.Addrs < 1 || cfg.Addrs > 65_000 || cfg.Conc < 1 || cfg.OwnerWithin <= 0 {
		fmt.Fprintln(os.Stderr, "flood: -idle and -viewers must be >= 0, -prompt, -addrs (at most 65000) and -concurrency >= 1, -owner-within > 0")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, cfg, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "flood: %v\n", err)
		return 1
	}
	if cfg.JSON {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Println(string(b))
	} else {
		res.print(os.Stdout, cfg)
	}
	if !res.OwnerOK(cfg) {
		return 1
	}
	return 0
}
