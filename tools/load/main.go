// Command load runs the relay under load: it starts the real `pilotdesk
// serve` (the scripted agent streaming long replies, SQLite history in a temp
// data dir, or -memory; or, with -nats, -relays relays sharing a 3-node
// nats-server cluster on loopback, the connections spread over them), opens -conns WebSocket connections on 127.0.0.1
// spread over -convs conversations, keeps every conversation streaming for
// -duration (a prompt is re-sent when a turn ends), and then checks that every
// subscriber received every event from its subscription point on, once and
// in order. It prints deliveries per second, lost deliveries, latency and the
// relay's peak RSS, and exits 1 if a delivery was lost.
//
//	go build -tags ci -o /tmp/pilotdesk . && go run ./tools/load -bin /tmp/pilotdesk
//
// See docs/reliability.md for what the figures mean and how they are measured.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
)

// config is the run's settings, one per flag.
type config struct {
	Bin           string
	Conns         int
	Convs         int
	Duration      time.Duration
	Memory        bool
	Deltas        int           // deltas per turn
	Interval      time.Duration // pause between two deltas
	Payload       int           // bytes of text per delta
	DialConc      int           // connections opened at once during setup
	Drain         time.Duration // how long subscribers may take to catch up at the end
	KillAt        time.Duration // SIGKILL the relay this far into the run and restart it (0: never)
	NATS          bool          // relays sharing a 3-node nats-server cluster instead of one relay on SQLite
	Relays        int           // relays with -nats
	IdleRelays    int           // with -nats: more relays that no client connects to
	NATSLease     time.Duration // serve --nats-lease with -nats (0: the relay's default)
	NATSStreams   int           // serve --nats-streams with -nats (0: the relay's default, 1)
	Fault         string        // with -nats: the fault injected at -kill-at (faults)
	FaultFor      time.Duration // how long it lasts (0: drawn from the seed)
	Seed          uint64        // draws the fault's timing and victims (0: a random one, printed)
	VerifyHistory bool          // replay every conversation from seq 0 at the end
	Keep          bool          // keep the temp dir (data dir, relay log)
	JSON          bool          // print the result as JSON
	Verbose       bool
	CPUProfile    string // write the load tool's own CPU profile here
	Scale         bool   // with -nats: the same load on 1, 2, … -relays relays (scale.go)
	Rounds        int    // with -scale: how many rounds of the counts up and down
	Placement     string // with -nats: which relay each connection goes to (placement.go)
	RelayProfile  string // write each relay's CPU profile of the streaming window in this folder (profile.go)

	// profileTag starts the profiles' file names (-scale names its runs).
	profileTag string

	// natsPassword is the relays' NATS password with -nats, given them in
	// PILOTDESK_NATS_PASSWORD as docs/operations.md says (set by run).
	natsPassword string
}

func main() { os.Exit(loadMain()) }

// loadMain parses the flags, runs and returns the exit status: 0 when
// nothing was lost, 1 when something was (or the run failed), 2 for bad
// flags.
func loadMain() int {
	var cfg config
	flag.StringVar(&cfg.Bin, "bin", "./pilotdesk", "the pilotdesk binary to run as the relay (`go build -tags ci -o pilotdesk .`)")
	flag.IntVar(&cfg.Conns, "conns", 1000, "concurrent WebSocket connections (each subscribes to one conversation)")
	flag.IntVar(&cfg.Convs, "convs", 100, "conversations streaming at once (one connection of each sends the prompts)")
	flag.DurationVar(&cfg.Duration, "duration", 60*time.Second, "how long the conversations stream")
	flag.BoolVar(&cfg.Memory, "memory", false, "keep the relay's history in memory (--data-dir :memory:) instead of SQLite")
	flag.IntVar(&cfg.Deltas, "deltas", 100, "deltas per turn of the scripted agent")
	flag.DurationVar(&cfg.Interval, "interval", 20*time.Millisecond, "pause between two deltas of a turn")
	flag.IntVar(&cfg.Payload, "payload", 24, "bytes of text per delta")
	flag.IntVar(&cfg.DialConc, "dial-concurrency", 50, "connections opened at once during setup")
	flag.DurationVar(&cfg.Drain, "drain", 60*time.Second, "how long subscribers may take to receive the last events after the run")
	flag.DurationVar(&cfg.KillAt, "kill-at", 0, "SIGKILL the relay this far into the run, restart it on the same data dir and let every client resume (0: never; needs SQLite history); with -nats, SIGKILL one relay and let its clients resume at the others (default with -nats: 30 s, or half -duration if shorter)")
	flag.BoolVar(&cfg.NATS, "nats", false, "run -relays `pilotdesk serve --nats` relays sharing a 3-node nats-server cluster on loopback (connections spread over them); with -kill-at one relay is SIGKILLed and not restarted, and its clients move to the others")
	flag.IntVar(&cfg.Relays, "relays", 3, "relays with -nats")
	flag.IntVar(&cfg.IdleRelays, "idle-relays", 0, "with -nats: this many more relays that no client connects to; their CPU is what following the others' conversations costs a relay")
	flag.DurationVar(&cfg.NATSLease, "nats-lease", 0, "the relays' --nats-lease with -nats (0: the relay's default)")
	flag.IntVar(&cfg.NATSStreams, "nats-streams", 0, "the relays' --nats-streams with -nats: the history spread over this many event streams (0: the relay's default, 1)")
	flag.StringVar(&cfg.Fault, "fault", "", "with -nats: the fault injected at -kill-at: "+strings.Join(faults, ", ")+" (default relay-kill, none with -kill-at 0)")
	flag.DurationVar(&cfg.FaultFor, "fault-for", 0, "how long the fault lasts (a relay paused, nodes down); 0: drawn from -seed")
	flag.Uint64Var(&cfg.Seed, "seed", 0, "the seed that draws the fault's timing and victims (0: a random one; the run prints it)")
	flag.BoolVar(&cfg.VerifyHistory, "verify-history", true, "at the end, replay every conversation from seq 0 and check the stored history (SQLite or -nats)")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the temp dir with the data dir and the relay's log")
	flag.BoolVar(&cfg.JSON, "json", false, "print the result as JSON")
	flag.BoolVar(&cfg.Verbose, "v", false, "log progress details")
	flag.BoolVar(&cfg.Scale, "scale", false, "with -nats: run the same load on 1, 2, … -relays relays, one run each with no fault, and print each relay's CPU as a share of the single relay's (target with 3 relays: <= 0.38)")
	flag.IntVar(&cfg.Rounds, "rounds", 1, "with -scale: rounds of the relay counts up and back down (1, 2, 3, 3, 2, 1); the verdict is the median of the rounds' shares")
	flag.StringVar(&cfg.Placement, "placement", "", "with -nats: which relay each connection goes to: "+placementUsage+" (default: spread with -scale, conn otherwise)")
	flag.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write the load tool's own CPU profile to `FILE` (to see what the clients cost)")
	flag.StringVar(&cfg.RelayProfile, "relay-profile", "", "write each relay's CPU profile of the streaming window (its first -duration less a second) in `DIR` (relay<i>.pprof; with -scale run<k>-relays<n>-relay<i>.pprof), for go tool pprof -diff_base")
	flag.Parse()
	killSet := false
	flag.Visit(func(f *flag.Flag) { killSet = killSet || f.Name == "kill-at" })
	if cfg.NATS && !killSet {
		// The -nats run is the failover test: a relay dies halfway
		// unless -kill-at says otherwise (-kill-at 0: none).
		cfg.KillAt = min(30*time.Second, cfg.Duration/2)
	}
	if cfg.NATS && cfg.Fault == "" {
		cfg.Fault = faultRelayKill
		if cfg.KillAt == 0 {
			cfg.Fault = faultNone
		}
	}
	if cfg.Fault != "" && cfg.Fault != faultNone && cfg.Fault != faultRelayKill && !killSet {
		cfg.KillAt = min(20*time.Second, cfg.Duration/3)
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64N(1<<31) + 1
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "load: unexpected argument %q\n", flag.Arg(0))
		return 2
	}
	if err := cfg.validate(); err != nil {
		fmt.Fprintf(os.Stderr, "load: %v\n", err)
		return 2
	}
	level := slog.LevelInfo
	if cfg.Verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "load: %v\n", err)
			return 2
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "load: %v\n", err)
			return 2
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.Scale {
		failed, err := runScale(ctx, cfg, log, os.Stdout)
		if err != nil {
			fmt.Fprintf(os.Stderr, "load: %v\n", err)
		}
		if failed || err != nil {
			return 1
		}
		return 0
	}
	res, err := run(ctx, cfg, log)
	if res != nil {
		if cfg.JSON {
			res.printJSON(os.Stdout)
		} else {
			res.print(os.Stdout)
		}
	}
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "load: %v\n", err)
		return 1
	case res.failed():
		fmt.Fprintln(os.Stderr, "load: FAILED: "+res.failure())
		return 1
	}
	return 0
}

// validate checks c and fills in what depends on other fields (the
// default -placement), so that a config built in code, as the tests build
// theirs, gets the same defaults as one from the command line.
func (c *config) validate() error {
	if c.Placement == "" {
		c.Placement = placeConn
		if c.Scale {
			c.Placement = placeSpread
		}
	}
	switch {
	case c.Conns < 1 || c.Convs < 1:
		return fmt.Errorf("-conns and -convs must be at least 1")
	case c.Convs > c.Conns:
		return fmt.Errorf("-convs (%d) cannot exceed -conns (%d): each conversation needs a connection that sends", c.Convs, c.Conns)
	case c.Duration <= 0 || c.Interval <= 0 || c.Deltas < 1 || c.Payload < 1:
		return fmt.Errorf("-duration, -interval, -deltas and -payload must be positive")
	case c.DialConc < 1:
		return fmt.Errorf("-dial-concurrency must be at least 1")
	case c.KillAt < 0 || (c.KillAt > 0 && c.KillAt >= c.Duration):
		return fmt.Errorf("-kill-at must be within -duration")
	case c.KillAt > 0 && c.Memory:
		return fmt.Errorf("-kill-at needs SQLite history: with -memory a restart loses everything")
	case c.NATS && c.Memory:
		return fmt.Errorf("-nats keeps the history in the cluster: -memory does not go with it")
	case c.NATS && (c.Relays < 1 || c.Relays > c.Conns):
		return fmt.Errorf("-relays must be at least 1 and at most -conns")
	case c.NATS && c.KillAt > 0 && c.Relays < 2 && (c.Fault == faultRelayKill || c.Fault == faultRelayStop || relayPartition(c.Fault)):
		return fmt.Errorf("-fault %s needs at least 2 relays (-relays): the killed relay's clients move to another", c.Fault)
	case validFault(c.Fault) != nil:
		return validFault(c.Fault)
	case c.Fault != "" && c.Fault != faultNone && !c.NATS:
		return fmt.Errorf("-fault goes with -nats")
	case c.FaultFor < 0:
		return fmt.Errorf("-fault-for must not be negative")
	case c.IdleRelays < 0 || (c.IdleRelays > 0 && !c.NATS):
		return fmt.Errorf("-idle-relays goes with -nats and must not be negative")
	case c.Scale && !c.NATS:
		return fmt.Errorf("-scale goes with -nats")
	case c.Scale && c.Rounds < 1:
		return fmt.Errorf("-rounds must be at least 1")
	case validPlacement(c.Placement, c.Scale) != nil:
		return validPlacement(c.Placement, c.Scale)
	case c.NATSStreams < 0 || (c.NATSStreams > 0 && !c.NATS):
		return fmt.Errorf("-nats-streams goes with -nats and must not be negative")
	case c.NATSLease < 0 || (c.NATSLease > 0 && !c.NATS):
		return fmt.Errorf("-nats-lease goes with -nats and must be positive")
	}
	if c.RelayProfile != "" {
		if st, err := os.Stat(c.RelayProfile); err != nil || !st.IsDir() {
			return fmt.Errorf("-relay-profile %q must be an existing folder", c.RelayProfile)
		}
	}
	if _, err := os.Stat(c.Bin); err != nil {
		return fmt.Errorf("the relay binary: %w (build it with `go build -tags ci -o pilotdesk .`, or run `make load`)", err)
	}
	return nil
}
