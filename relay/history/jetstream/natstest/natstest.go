// Package natstest starts real nats-server processes for tests: a cluster
// of nodes on 127.0.0.1, random ports, temporary store dirs, and the
// least-privilege account the relays use (docs/scale-out.md, Server
// settings). Tests kill and restart nodes to see what a failure does.
package natstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Version is the nats-server the project installs (make nats-server).
const Version = "v2.15.2"

// Binary finds nats-server: $NATS_SERVER, then the project's
// .tools/bin/nats-server (scripts/install-nats-server.sh puts it there),
// then $PATH.
func Binary() (string, error) {
	if p := os.Getenv("NATS_SERVER"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("NATS_SERVER=%s: %w", p, err)
		}
		return p, nil
	}
	if root, err := moduleRoot(); err == nil {
		p := filepath.Join(root, ".tools", "bin", "nats-server")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("nats-server")
	if err != nil {
		return "", errors.New("nats-server is not installed: `make nats-server` (scripts/install-nats-server.sh) installs it into .tools/bin")
	}
	return p, nil
}

// moduleRoot is the directory of go.mod above this file.
func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("no caller")
	}
	for dir := filepath.Dir(file); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no go.mod above " + file)
		}
	}
}

// TB is what Start needs of a test: *testing.T and *testing.B have it, and
// a tool (the fan-out benchmark) gives its own.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
	TempDir() string
	Failed() bool
}

var _ TB = testing.TB(nil)

// Cluster is a set of nats-server processes forming one JetStream cluster.
type Cluster struct {
	t        TB
	bin      string
	User     string
	Password string
	Nodes    []*Node
	command  func(i int, name string, args ...string) *exec.Cmd
}

// Node is one nats-server process of a Cluster.
type Node struct {
	Name string
	// Host is the address the node listens on, for clients and for the
	// other nodes: 127.0.0.1 unless Hosts says otherwise.
	Host        string
	ClientPort  int
	ClusterPort int
	index       int
	conf        string
	log         string

	mu     sync.Mutex // guards cmd, exited
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been waited for
}

// PID is the node's process id (0 while it is not running).
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// URL is the node's client URL.
func (n *Node) URL() string {
	return fmt.Sprintf("nats://%s", net.JoinHostPort(n.Host, strconv.Itoa(n.ClientPort)))
}

// Permissions are what a user may publish and subscribe to.
type Permissions struct{ Publish, Subscribe []string }

// RelayPermissions are the relay user's, as docs/scale-out.md gives them:
// the nodes' user's unless WithPermissions says otherwise.
func RelayPermissions() Permissions {
	return Permissions{
		Publish:   []string{"pilotdesk.>", "$JS.API.>", "$KV.pd_meta.>", "$KV.pd_relays.>", "$KV.pd_owners.>", "$KV.pd_presence.>", "$KV.pd_devices.>", "$KV.pd_spend.>", "$JS.FC.>", "_INBOX.>"},
		Subscribe: []string{"pilotdesk.>", "_INBOX.>"},
	}
}

// Option sets up the nodes of a cluster Start starts.
type Option func(*settings)

type settings struct {
	syncInterval string
	perms        Permissions
	hosts        []string
	command      func(i int, name string, args ...string) *exec.Cmd
	// pickPorts chooses n free ports; tests of natstest replace it to
	// hand out a port that is already taken.
	pickPorts func(t TB, n int) []int
}

// SyncInterval sets the nodes' JetStream sync_interval. The default is
// "always", an fsync before every acknowledgement, as docs/operations.md
// configures a cluster, so that what the tests and benchmarks measure is
// what an acknowledged, durable append costs; a benchmark sets another to
// measure what the fsync costs (tools/fanoutbench -nats-sync).
func SyncInterval(s string) Option { return func(o *settings) { o.syncInterval = s } }

// WithPermissions gives the nodes' user p instead of RelayPermissions.
func WithPermissions(p Permissions) Option { return func(o *settings) { o.perms = p } }

// Hosts gives node i the listen address hosts[i] (clients and routes)
// instead of 127.0.0.1; Command starts it. Together they put a node in a
// network namespace of its own, which tools/load's partitions cut off
// (docs/reliability.md, Faults).
func Hosts(hosts []string) Option { return func(o *settings) { o.hosts = hosts } }

// Command starts node i's process (name and args are nats-server's) with
// f instead of exec.Command: `ip netns exec NS name args...` runs it in a
// network namespace. The process f starts must be nats-server itself (a
// wrapper that execs it, as ip netns exec does), since Kill signals it.
func Command(f func(i int, name string, args ...string) *exec.Cmd) Option {
	return func(o *settings) { o.command = f }
}

// Start starts an n-node cluster (n ≥ 1; 3 for a real quorum) and waits
// until JetStream answers on every node. It skips the test, saying why,
// when nats-server is not installed. The nodes are killed when the test
// ends; their logs are printed if it failed.
func Start(t TB, n int, opts ...Option) *Cluster {
	t.Helper()
	set := settings{syncInterval: "always", perms: RelayPermissions(), pickPorts: FreePorts}
	for _, o := range opts {
		o(&set)
	}
	bin, err := Binary()
	if err != nil {
		t.Skipf("skipping the real-cluster test: %v", err)
	}
	c := &Cluster{t: t, bin: bin, User: "relay", Password: randomHex(12), command: set.command}
	// The ports are free when chosen and taken only when nats-server
	// binds them; in between another test's listener or outgoing
	// connection can take one, and that node exits. Such a start is
	// thrown away and made again on fresh ports in a fresh folder.
	const attempts = 5
	for attempt := 1; ; attempt++ {
		err := c.launch(t.TempDir(), n, set)
		if err == nil {
			break
		}
		for _, node := range c.Nodes {
			c.kill(node)
		}
		if !errors.Is(err, errPortTaken) || attempt == attempts {
			for _, node := range c.Nodes {
				c.printLog(node)
			}
			t.Fatalf("starting %d nats-server nodes (attempt %d): %v", n, attempt, err)
		}
		t.Logf("natstest: %v; starting again on other ports", err)
	}
	// Registered after the nodes' folders were made, so that it runs
	// before they are removed (clean-ups run last first): removed while a
	// node still ran, a node writing there failed the removal ("directory
	// not empty").
	t.Cleanup(func() {
		for _, node := range c.Nodes {
			c.kill(node)
		}
		if t.Failed() {
			for _, node := range c.Nodes {
				c.printLog(node)
			}
		}
	})
	c.WaitReady(60 * time.Second)
	return c
}

// errPortTaken is a node's exit because a port chosen for it was taken
// before it could listen.
var errPortTaken = errors.New("a port was taken before nats-server could listen on it")

// launch writes every node's configuration in dir, on fresh ports,
// starts them and waits until each listens (or one exits).
func (c *Cluster) launch(dir string, n int, set settings) error {
	ports := set.pickPorts(c.t, 2*n)
	host := func(i int) string {
		if i < len(set.hosts) && set.hosts[i] != "" {
			return set.hosts[i]
		}
		return "127.0.0.1"
	}
	var routes []string
	for i := range n {
		routes = append(routes, "nats-route://"+net.JoinHostPort(host(i), strconv.Itoa(ports[n+i])))
	}
	quote := func(list []string) string {
		q := make([]string, len(list))
		for i, s := range list {
			q[i] = fmt.Sprintf("%q", s)
		}
		return strings.Join(q, ", ")
	}
	c.Nodes = nil
	for i := range n {
		node := &Node{Name: fmt.Sprintf("n%d", i+1), Host: host(i), ClientPort: ports[i], ClusterPort: ports[n+i], index: i}
		node.conf = filepath.Join(dir, node.Name+".conf")
		node.log = filepath.Join(dir, node.Name+".log")
		cluster := ""
		if n > 1 {
			cluster = fmt.Sprintf("cluster {\n  name: pdtest\n  listen: %q\n  routes: [%s]\n}\n", net.JoinHostPort(node.Host, strconv.Itoa(node.ClusterPort)), strings.Join(routes, ", "))
		}
		conf := fmt.Sprintf(`server_name: %s
listen: %q
jetstream {
  store_dir: %q
  max_memory_store: 256MB
  max_file_store: 4GB
  limits { batch { max_inflight_per_stream: 1000, max_inflight_total: 5000 } }
  sync_interval: %s
}
%saccounts {
  PILOTDESK {
    jetstream: enabled
    users: [{ user: %q, password: %q,
      permissions: { publish: [%s], subscribe: [%s] } }]
  }
}
`, node.Name, net.JoinHostPort(node.Host, strconv.Itoa(node.ClientPort)), filepath.Join(dir, node.Name), set.syncInterval, cluster, c.User, c.Password, quote(set.perms.Publish), quote(set.perms.Subscribe))
		if err := os.WriteFile(node.conf, []byte(conf), 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", node.conf, err)
		}
		c.Nodes = append(c.Nodes, node)
	}
	for _, node := range c.Nodes {
		if err := c.start(node); err != nil {
			return err
		}
	}
	for _, node := range c.Nodes {
		if err := c.waitListening(node, n > 1, 30*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// waitListening waits until the node's log says it listens for clients
// and, in a cluster, for routes (nats-server binds the route port on a
// goroutine of its own, possibly after "Server is ready"). A node that
// exits first is errPortTaken when its log says the address was in use.
// Reaching the timeout is not an error: WaitReady then has the last word.
func (c *Cluster) waitListening(node *Node, routes bool, timeout time.Duration) error {
	node.mu.Lock()
	exited := node.exited
	node.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(node.log)
		log := string(data)
		if strings.Contains(log, "Listening for client connections") &&
			(!routes || strings.Contains(log, "Listening for route connections")) {
			return nil
		}
		select {
		case <-exited:
			data, _ := os.ReadFile(node.log)
			if strings.Contains(string(data), "address already in use") {
				return fmt.Errorf("%s: %w", node.Name, errPortTaken)
			}
			return fmt.Errorf("%s exited while starting (its log follows)", node.Name)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

func (c *Cluster) start(node *Node) error {
	logf, err := os.OpenFile(node.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(c.bin, "-c", node.conf)
	if c.command != nil {
		cmd = c.command(node.index, c.bin, "-c", node.conf)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", node.Name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	node.mu.Lock()
	node.cmd, node.exited = cmd, exited
	node.mu.Unlock()
	return nil
}

// kill sends SIGKILL to the node's process and waits for it.
func (c *Cluster) kill(node *Node) {
	node.mu.Lock()
	cmd, exited := node.cmd, node.exited
	node.cmd = nil
	node.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// Kill SIGKILLs node i (no shutdown code runs, as in a crash).
func (c *Cluster) Kill(i int) { c.kill(c.Nodes[i]) }

// Restart starts node i again on its store dir.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if err := c.start(c.Nodes[i]); err != nil {
		c.t.Fatal(err)
	}
}

// URLs are every node's client URL, comma-separated (serve --nats).
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = n.URL()
	}
	return strings.Join(urls, ",")
}

// Connect connects as the relay user to the nodes, first to node first
// (no randomising), reconnecting for ever.
func (c *Cluster) Connect(first int) (*nats.Conn, error) {
	urls := []string{c.Nodes[first].URL()}
	for i, n := range c.Nodes {
		if i != first {
			urls = append(urls, n.URL())
		}
	}
	return nats.Connect(strings.Join(urls, ","), nats.UserInfo(c.User, c.Password), nats.DontRandomize(),
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.Name("natstest"))
}

// JetStream connects as Connect does and returns the connection with its
// JetStream context, for a caller that asks the cluster about its streams
// (StreamLeader); the caller closes nc.
func (c *Cluster) JetStream(first int) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := c.Connect(first)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// WaitReady waits until JetStream answers on every running node (a meta
// leader is elected).
func (c *Cluster) WaitReady(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for i, node := range c.Nodes {
		node.mu.Lock()
		running := node.cmd != nil
		node.mu.Unlock()
		if !running {
			continue
		}
		var last error
		for {
			if last = c.ping(i); last == nil {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("JetStream on %s not ready after %v: %v", node.Name, timeout, last)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func (c *Cluster) ping(i int) error {
	nc, err := nats.Connect(c.Nodes[i].URL(), nats.UserInfo(c.User, c.Password), nats.Timeout(time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

// StreamLeader returns the index of the node leading the stream, and of
// one that follows it.
func (c *Cluster) StreamLeader(ctx context.Context, js jetstream.JetStream, stream string) (leader, follower int, err error) {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, 0, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return 0, 0, fmt.Errorf("stream %s has no leader", stream)
	}
	leader = -1
	for i, n := range c.Nodes {
		if n.Name == info.Cluster.Leader {
			leader = i
		}
	}
	if leader < 0 {
		return 0, 0, fmt.Errorf("stream %s is led by %q, not one of ours", stream, info.Cluster.Leader)
	}
	return leader, (leader + 1) % len(c.Nodes), nil
}

func (c *Cluster) printLog(node *Node) {
	data, err := os.ReadFile(node.log)
	if err != nil {
		return
	}
	if len(data) > 8<<10 {
		data = data[len(data)-8<<10:]
	}
	c.t.Logf("--- %s log (tail) ---\n%s", node.Name, data)
}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that nothing
// listens on now (all held open at once, so none comes twice): what Start
// gives its nodes, and what a test that starts servers of its own
// (tests/cluster) picks from.
func FreePorts(t TB, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// StartProcess is Start for a program rather than a test (tools/load
// -nats, tools/fanoutbench -nats cluster): what would fail or skip a test
// is returned as an error, with any node already started killed, and stop
// kills the nodes and removes their files. dirPattern names the temporary
// directory (os.MkdirTemp's pattern).
func StartProcess(n int, dirPattern string, opts ...Option) (c *Cluster, stop func(), err error) {
	tb := &processTB{dirPattern: dirPattern}
	defer func() {
		if r := recover(); r != nil {
			tb.failed = true
			tb.close()
			c, stop, err = nil, nil, fmt.Errorf("starting a %d-node nats-server cluster: %v", n, r)
		}
	}()
	return Start(tb, n, opts...), tb.close, nil
}

// processTB is TB for StartProcess: a failure panics (StartProcess
// recovers it), and the clean-ups run at close. Start uses it from one
// goroutine only.
type processTB struct {
	dirPattern string
	cleanups   []func()
	failed     bool
}

func (t *processTB) Helper()           {}
func (t *processTB) Fatal(args ...any) { t.failed = true; panic(fmt.Sprint(args...)) }
func (t *processTB) Fatalf(format string, args ...any) {
	t.failed = true
	panic(fmt.Sprintf(format, args...))
}
func (t *processTB) Skipf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *processTB) Logf(format string, args ...any)  { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (t *processTB) Cleanup(f func())                 { t.cleanups = append(t.cleanups, f) }
func (t *processTB) Failed() bool                     { return t.failed }

func (t *processTB) TempDir() string {
	dir, err := os.MkdirTemp("", t.dirPattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// close runs the clean-ups, last first, once.
func (t *processTB) close() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}
