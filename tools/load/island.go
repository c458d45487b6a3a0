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
// pair is a real network partition: every packet either way is dropped
// silently (a pfifo queue of length 0 on both ends; the kernel's
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

// cut drops every packet either way between the island and the rest.
func (is *island) cut() error {
	return errors.Join(
		tc("qdisc", "add", "dev", is.host, "root", "pfifo", "limit", "0"),
		tc("-n", is.ns, "qdisc", "add", "dev", is.peer, "root", "pfifo", "limit", "0"),
	)
}

// heal lets packets through again.
func (is *island) heal() error {
	return errors.Join(
		tc("qdisc", "del", "dev", is.host, "root"),
		tc("-n", is.ns, "qdisc", "del", "dev", is.peer, "root"),
	)
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
	if err := is.cut(); err != nil {
		return fmt.Errorf("cutting a network namespace off: %w", err)
	}
	return is.heal()
}
