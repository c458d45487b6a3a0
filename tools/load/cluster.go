package main

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// natsCluster is the 3-node nats-server cluster of a -nats run: the one the
// tests use (natstest: loopback, random ports, the relay user's
// least-privilege permissions), started and stopped by the run.
type natsCluster struct {
	c    *natstest.Cluster
	stop func() // kills the nodes and removes their files
}

// startNATSCluster starts three nats-server nodes and waits until
// JetStream answers on each.
func startNATSCluster() (*natsCluster, error) {
	c, stop, err := natstest.StartProcess(3, "pilotdesk-load-nats-*")
	if err != nil {
		return nil, err
	}
	return &natsCluster{c: c, stop: stop}, nil
}

// relayArgs are relay i's history flags: the cluster's URLs naming the
// relay user (its password goes in the environment: startRelay), starting
// from a different node for each relay (as TestNATSRelaysShare does), and
// a data dir of its own.
func (n *natsCluster) relayArgs(cfg config, dir string, i int) []string {
	var urls []string
	for j := range n.c.Nodes {
		node := n.c.Nodes[(i+j)%len(n.c.Nodes)]
		urls = append(urls, fmt.Sprintf("nats://%s@127.0.0.1:%d", url.User(n.c.User), node.ClientPort))
	}
	// The relay keeps its own files there (relay.json); the history is in
	// the cluster.
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

// restart starts node i again on its store dir. natstest reports a
// failure by panicking through its process TB: it is an error here.
func (n *natsCluster) restart(i int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("starting node %s again: %v", n.c.Nodes[i].Name, r)
		}
	}()
	n.c.Restart(i)
	return nil
}

// waitReady waits until JetStream answers on every running node.
func (n *natsCluster) waitReady(timeout time.Duration) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the cluster after the fault: %v", r)
		}
	}()
	n.c.WaitReady(timeout)
	return nil
}
