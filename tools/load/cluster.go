package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// natsCluster is the 3-node nats-server cluster of a -nats run: the one the
// tests use (natstest: loopback, random ports, the relay user's
// least-privilege permissions), started and stopped by the run.
type natsCluster struct {
	c  *natstest.Cluster
	tb *toolTB
}

// startNATSCluster starts three nats-server nodes and waits until
// JetStream answers on each.
func startNATSCluster() (nc *natsCluster, err error) {
	tb := &toolTB{}
	defer func() {
		if r := recover(); r != nil {
			tb.failed = true
			tb.close()
			err = fmt.Errorf("starting a 3-node nats-server cluster: %v", r)
		}
	}()
	return &natsCluster{c: natstest.Start(tb, 3), tb: tb}, nil
}

// relayArgs are relay i's history flags: the cluster's URLs with the relay
// user's password, starting from a different node for each relay (as
// TestNATSRelaysShare does), and a data dir of its own.
func (n *natsCluster) relayArgs(cfg config, dir string, i int) []string {
	var urls []string
	for j := range n.c.Nodes {
		node := n.c.Nodes[(i+j)%len(n.c.Nodes)]
		urls = append(urls, fmt.Sprintf("nats://%s@127.0.0.1:%d", url.UserPassword(n.c.User, n.c.Password), node.ClientPort))
	}
	// The relay keeps its own files there (relay.json); the history is in
	// the cluster. startRelay creates it.
	args := []string{"--nats", strings.Join(urls, ","), "--data-dir", filepath.Join(dir, fmt.Sprintf("relay%d", i+1))}
	if cfg.NATSLease > 0 {
		args = append(args, "--nats-lease", cfg.NATSLease.String())
	}
	return args
}

// cpu is the nats-server processes' CPU time so far.
func (n *natsCluster) cpu() time.Duration {
	var total time.Duration
	for _, node := range n.c.Nodes {
		if pid := node.PID(); pid != 0 {
			if d, err := procCPU(pid); err == nil {
				total += d
			}
		}
	}
	return total
}

// stop kills the nodes and removes their files.
func (n *natsCluster) stop() { n.tb.close() }

// toolTB is natstest.TB for a command: a failure panics (startNATSCluster
// recovers it), and the clean-ups run at close.
type toolTB struct {
	cleanups []func()
	failed   bool
}

func (t *toolTB) Helper()           {}
func (t *toolTB) Fatal(args ...any) { t.failed = true; panic(fmt.Sprint(args...)) }
func (t *toolTB) Fatalf(format string, args ...any) {
	t.failed = true
	panic(fmt.Sprintf(format, args...))
}
func (t *toolTB) Skipf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *toolTB) Logf(format string, args ...any)  { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (t *toolTB) Cleanup(f func())                 { t.cleanups = append(t.cleanups, f) }
func (t *toolTB) Failed() bool                     { return t.failed }

func (t *toolTB) TempDir() string {
	dir, err := os.MkdirTemp("", "pilotdesk-load-nats-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (t *toolTB) close() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}
