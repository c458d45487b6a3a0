package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// An island is a network namespace of its own, joined to this machine's
// by one veth pair: a process started in it (a relay, a nats-server node)
// reaches the others, and they it, only through that pair. Cutting the
// pair is a real network partition: every packet either way (or one way
// only: cut) is dropped silently (a pfifo queue of length 0 on both ends; the kernel's
// classifiers and netem are not needed), open TCP connections hear
// nothing and retransmit, new ones time out, and when it heals the same
// connections go on. Nothing leaves the machine: the pair has no uplink,
// and its addresses (10.201.N.1 on this side, 10.201.N.2 in the island)
// are routed nowhere else. The other processes listen on 10.201.N.1, a
// local address of this namespace, so that the island reaches them; this
// side reaches them there through the loopback as before.
type island struct {
	ns       string // the namespace's name (ip netns)
	host     string // the pair's end on this side
	peer     string // its end in the island
	HostAddr string // this side's address, where the island reaches the others
	Addr     string // the island's address

	// dropIn, dropOut: the queues of length 0 in place (cut), on this
	// side's end (packets into the island) and on the island's (out of it).
	dropIn, dropOut bool
}

// islandSubnets is how many /30 subnets of 10.201.0.0/16 an island may
// take; newIsland takes the first no interface of this machine uses, from
// one that depends on the process id, so that runs at once do not meet.
const islandSubnets = 16384

// newIsland makes the namespace and its veth pair. It needs root (or
// CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2's ip; the error says
// which is missing.
func newIsland() (*island, error) {
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, errors.New("network partitions need iproute2's ip, which is not installed")
	}
	used, err := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	if err != nil {
		return nil, fmt.Errorf("listing this machine's addresses: %w", err)
	}
	pid := os.Getpid()
	for k := range islandSubnets {
		n := (pid + k) % islandSubnets
		hostAddr := fmt.Sprintf("10.201.%d.%d", n/64, (n%64)*4+1)
		if strings.Contains(string(used), " "+hostAddr+"/") {
			continue
		}
		is := &island{
			ns:       fmt.Sprintf("pdisle%d", n),
			host:     fmt.Sprintf("pdi%dh", n),
			peer:     fmt.Sprintf("pdi%dp", n),
			HostAddr: hostAddr,
			Addr:     fmt.Sprintf("10.201.%d.%d", n/64, (n%64)*4+2),
		}
		if err := is.make(); err != nil {
			is.close()
			return nil, err
		}
		return is, nil
	}
	return nil, errors.New("no free subnet in 10.201.0.0/16 for a network partition")
}

func (is *island) make() error {
	steps := [][]string{
		{"netns", "add", is.ns},
		{"link", "add", is.host, "type", "veth", "peer", "name", is.peer},
		{"link", "set", is.peer, "netns", is.ns},
		{"addr", "add", is.HostAddr + "/30", "dev", is.host},
		{"link", "set", is.host, "up"},
		{"-n", is.ns, "addr", "add", is.Addr + "/30", "dev", is.peer},
		{"-n", is.ns, "link", "set", is.peer, "up"},
		{"-n", is.ns, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return fmt.Errorf("making a network namespace for a partition (root is needed): %w", err)
		}
	}
	return nil
}

// command runs name in the island: `ip netns exec` enters the namespace
// and execs name, so the process started is name itself (signals reach
// it).
func (is *island) command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", is.ns, name}, args...)...)
}

// Which packets a partition drops (island.cut): either way, or one way
// only. A one-way partition is what a link that fails in one direction
// does (a route or a firewall rule lost on one side): for TCP both
// directions stall soon (what gets through is never acknowledged, so the
// sender retransmits it and sends nothing new), but what was in flight at
// the cut is delivered one way, unacknowledged, and each side notices
// the silence at its own time.
const (
	wayBoth = "both"
	wayIn   = "in"  // into the island: it hears nothing; what it sends gets out
	wayOut  = "out" // out of the island: it hears everything; nothing it sends gets out
)

// cut drops the packets between the island and the rest that way says: a
// pfifo queue of length 0 on this side's end of the pair drops what goes
// into the island, one on the island's end what comes out.
func (is *island) cut(way string) error {
	in, out := way != wayOut, way != wayIn
	var errs []error
	if in {
		errs = append(errs, tc("qdisc", "add", "dev", is.host, "root", "pfifo", "limit", "0"))
		is.dropIn = errs[len(errs)-1] == nil
	}
	if out {
		errs = append(errs, tc("-n", is.ns, "qdisc", "add", "dev", is.peer, "root", "pfifo", "limit", "0"))
		is.dropOut = errs[len(errs)-1] == nil
	}
	return errors.Join(errs...)
}

// heal lets packets through again: the queues cut put in place go.
func (is *island) heal() error {
	var errs []error
	if is.dropIn {
		errs = append(errs, tc("qdisc", "del", "dev", is.host, "root"))
		is.dropIn = false
	}
	if is.dropOut {
		errs = append(errs, tc("-n", is.ns, "qdisc", "del", "dev", is.peer, "root"))
		is.dropOut = false
	}
	return errors.Join(errs...)
}

// close removes the namespace and the pair (deleting one end deletes
// both). A process still in the island keeps its namespace alive until it
// exits; the caller stops them first.
func (is *island) close() {
	_ = ip("link", "del", is.host)
	_ = ip("netns", "del", is.ns)
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func tc(args ...string) error {
	out, err := exec.Command("tc", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("tc %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// islandsAvailable says why network partitions cannot be made here (nil:
// they can): it makes an island, cuts and heals it, and removes it.
func islandsAvailable() error {
	if _, err := exec.LookPath("tc"); err != nil {
		return errors.New("network partitions need iproute2's tc, which is not installed")
	}
	is, err := newIsland()
	if err != nil {
		return err
	}
	defer is.close()
	if err := is.cut(wayBoth); err != nil {
		return fmt.Errorf("cutting a network namespace off: %w", err)
	}
	return is.heal()
}
