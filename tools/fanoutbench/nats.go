package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// natsEnv hands the cluster's URLs (with the relay user's password) to the
// relay process.
const natsEnv = "PILOTDESK_FANOUTBENCH_NATS"

// natsPIDs are the cluster's nats-server processes, whose CPU the rounds
// report next to the relay's: with a cluster, storing an event costs CPU
// there too.
var natsPIDs []int

// startCluster starts a 3-node nats-server cluster on loopback (the one the
// tests use, natstest) for -store jetstream -nats cluster.
func startCluster(opts ...natstest.Option) (stop func(), err error) {
	c, stop, err := natstest.StartProcess(3, "fanoutbench-cluster-*", opts...)
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, n := range c.Nodes {
		urls = append(urls, fmt.Sprintf("nats://%s@127.0.0.1:%d", url.UserPassword(c.User, c.Password), n.ClientPort))
		natsPIDs = append(natsPIDs, n.PID())
	}
	if err := os.Setenv(natsEnv, strings.Join(urls, ",")); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// openJetStream is the relay process's JetStream store: on the cluster the
// parent started (R3), or on a node in this process (R1, fsync before
// every ack).
func openJetStream(o options, logger *slog.Logger) (history.Store, func(), error) {
	ctx := context.Background()
	if o.nats == "embedded" {
		dir, err := os.MkdirTemp("", "fanoutbench-nats-*")
		if err != nil {
			return nil, nil, err
		}
		node, err := jetstream.StartEmbedded(dir, logger)
		if err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
		nc, err := node.Connect("fanoutbench")
		if err != nil {
			node.Shutdown()
			os.RemoveAll(dir)
			return nil, nil, err
		}
		st, err := jetstream.Open(ctx, nc, jetstream.Options{Replicas: 1, Logger: logger})
		if err != nil {
			nc.Close()
			node.Shutdown()
			os.RemoveAll(dir)
			return nil, nil, err
		}
		return st, func() { st.Close(); nc.Close(); node.Shutdown(); os.RemoveAll(dir) }, nil
	}
	urls := os.Getenv(natsEnv)
	if urls == "" {
		return nil, nil, fmt.Errorf("-nats %q: want cluster or embedded", o.nats)
	}
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.Name("fanoutbench"))
	if err != nil {
		return nil, nil, err
	}
	st, err := jetstream.Open(ctx, nc, jetstream.Options{Replicas: 3, Logger: logger})
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return st, func() { st.Close(); nc.Close() }, nil
}

// natsCPU is the user and system CPU time of the nats-server processes so
// far (Linux: /proc; elsewhere 0).
func natsCPU() time.Duration {
	if runtime.GOOS != "linux" {
		return 0
	}
	var total time.Duration
	for _, pid := range natsPIDs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// After the command's ")": state is field 3, utime 14, stime 15.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(utime+stime) * (time.Second / 100) // USER_HZ is 100 on Linux
	}
	return total
}
