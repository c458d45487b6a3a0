package main

import (
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/procstat"
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
// JetStream answers on each. With an island (a partition fault), every
// node listens where the island reaches it, and node `isolated` (if not
// -1) runs in the island.
func startNATSCluster(is *island, isolated int) (*natsCluster, error) {
	var opts []natstest.Option
	if is != nil {
		hosts := []string{is.HostAddr, is.HostAddr, is.HostAddr}
		if isolated >= 0 {
			hosts[isolated] = is.Addr
		}
		opts = append(opts, natstest.Hosts(hosts), natstest.Command(func(i int, name string, args ...string) *exec.Cmd {
			if i == isolated {
				return is.command(name, args...)
			}
			return exec.Command(name, args...)
		}))
	}
	c, stop, err := natstest.StartProcess(3, "pilotdesk-load-nats-*", opts...)
	if err != nil {
		return nil, err
	}
	return &natsCluster{c: c, stop: stop}, nil
}

// relayArgs are relay i's history flags: the cluster's URLs naming the
// relay user (its password goes in the environment: startRelay), starting
// from a different node for each relay (as TestNATSRelaysShare does), and
// a data dir of its own.
//
// Under node-partition the relay of the isolated node's index lists that
// node alone, so that one relay at least is on it when it is cut off (a
// relay picks one of the nodes it lists at random); it learns the others
// from the node (NATS's discovery of the cluster's URLs), and must move to
// one of them.
func (n *natsCluster) relayArgs(cfg config, dir string, i, isolated int) []string {
	var urls []string
	for j := range n.c.Nodes {
		k := (i + j) % len(n.c.Nodes)
		if i == isolated && k != isolated {
			continue
		}
		node := n.c.Nodes[k]
		urls = append(urls, fmt.Sprintf("nats://%s@%s", url.User(n.c.User), net.JoinHostPort(node.Host, strconv.Itoa(node.ClientPort))))
	}
	// The relay keeps its own files there (relay.json); the history is in
	// the cluster.
	args := []string{"--nats", strings.Join(urls, ","), "--data-dir", filepath.Join(dir, fmt.Sprintf("relay%d", i+1))}
	if cfg.NATSLease > 0 {
		args = append(args, "--nats-lease", cfg.NATSLease.String())
	}
	if cfg.NATSStreams > 0 {
		args = append(args, "--nats-streams", strconv.Itoa(cfg.NATSStreams))
	}
	return args
}

// cpu is the nats-server processes' CPU time so far.
func (n *natsCluster) cpu() time.Duration {
	var total time.Duration
	for _, node := range n.c.Nodes {
		if pid := node.PID(); pid != 0 {
			if d, err := procstat.CPU(pid); err == nil {
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
