// Package cluster tests scripts/cluster.sh, what `make cluster` runs: a
// local 3-node nats-server cluster and two relays on it
// (docs/operations.md).
package cluster

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

func script(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../scripts/cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// freePorts returns n ports nothing listens on now, as the script takes
// them: in decimal.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for _, p := range natstest.FreePorts(t, n) {
		out = append(out, strconv.Itoa(p))
	}
	return out
}

func env(t *testing.T, dir string, ports []string) []string {
	return append(os.Environ(),
		"CLUSTER_DIR="+dir,
		"CLUSTER_CLIENT_PORTS="+strings.Join(ports[0:3], ","),
		"CLUSTER_ROUTE_PORTS="+strings.Join(ports[3:6], ","),
		"CLUSTER_HTTP_PORTS="+strings.Join(ports[6:9], ","),
		"CLUSTER_RELAY_PORTS="+strings.Join(ports[9:11], ","),
		"CLUSTER_SERVE_FLAGS=--agent script",
	)
}

// skipWithoutServer skips when nats-server cannot be installed, as the
// other real-cluster tests do.
func skipWithoutServer(t *testing.T, out []byte) {
	if strings.Contains(string(out), "install-nats-server:") && !strings.Contains(string(out), "building") {
		t.Skipf("nats-server could not be installed:\n%s", out)
	}
}

func TestScriptSyntax(t *testing.T) {
	if out, err := exec.Command("bash", "-n", script(t)).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	if sc, err := exec.LookPath("shellcheck"); err == nil {
		if out, err := exec.Command(sc, script(t)).CombinedOutput(); err != nil {
			t.Fatalf("shellcheck: %v\n%s", err, out)
		}
	}
}

// TestDryRun: the configurations are written, nats-server -t accepts them
// (the script checks), the relay user has the least-privilege permissions,
// the relays' command lines name the three nodes, and the NATS password
// is not printed.
func TestDryRun(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(script(t), "--dry-run")
	cmd.Env = env(t, dir, freePorts(t, 11))
	out, err := cmd.CombinedOutput()
	if err != nil {
		skipWithoutServer(t, out)
		t.Fatalf("--dry-run: %v\n%s", err, out)
	}
	secrets, err := os.ReadFile(filepath.Join(dir, "secrets"))
	if err != nil {
		t.Fatal(err)
	}
	password := regexp.MustCompile(`nats_password=(\S+)`).FindSubmatch(secrets)
	if password == nil || strings.Contains(string(out), string(password[1])) {
		t.Fatalf("the NATS password is printed (or missing):\n%s", out)
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		conf, err := os.ReadFile(filepath.Join(dir, n+".conf"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"server_name: " + n, `"$KV.pd_devices.>"`, `"$KV.pd_spend.>"`, `"$KV.pd_meta.>"`, "max_inflight_per_stream: 1000", "routes: [nats-route://127.0.0.1:"} {
			if !strings.Contains(string(conf), want) {
				t.Errorf("%s.conf lacks %q", n, want)
			}
		}
		if strings.Contains(string(conf), `"$KV.>"`) || strings.Contains(string(conf), `">"`) {
			t.Errorf("%s.conf lets the relay user write everything", n)
		}
	}
	if got := strings.Count(string(out), "would run: pilotdesk serve --nats "); got != 2 {
		t.Fatalf("%d relays would run, want 2:\n%s", got, out)
	}
	if err := exec.Command(script(t), "--bogus").Run(); err == nil {
		t.Fatal("an unknown flag was accepted")
	}
}

// TestRun starts the cluster and two relays as `make cluster` does, uses
// both relays, and stops everything with SIGTERM (Ctrl-C does the same).
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 nats-server nodes and 2 relays")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// The ports are free when chosen and taken only when the nodes and
	// relays listen; another test's listener or outgoing connection can
	// take one in between. Such a start is made again on other ports.
	var run *scriptRun
	for attempt := 1; ; attempt++ {
		var taken bool
		run, taken = startScript(t, ctx)
		if !taken {
			break
		}
		if attempt == 3 {
			t.Fatal("the script could not listen on its ports three times over")
		}
		t.Logf("a port was taken before the script listened on it; starting again on other ports")
	}
	dir, ports, cmd, exited, lines, urls, token := run.dir, run.ports, run.cmd, run.exited, run.lines, run.urls, run.token
	all := &run.all
	stopped := false
	defer func() {
		if !stopped {
			cmd.Process.Signal(syscall.SIGTERM)
			<-exited
		}
		if t.Failed() {
			t.Logf("script output:\n%s", all.String())
			for _, f := range []string{"relay1.log", "relay2.log", "n1.log"} {
				b, _ := os.ReadFile(filepath.Join(dir, f))
				t.Logf("%s:\n%s", f, b)
			}
		}
	}()

	if len(urls) != 2 || token == "" {
		t.Fatalf("relays %v, token %q", urls, token)
	}
	for i, u := range urls {
		if u != "ws://127.0.0.1:"+ports[9+i]+"/ws" {
			t.Fatalf("relay %d at %s, want port %s", i+1, u, ports[9+i])
		}
	}
	// A turn on each relay, followed from the other one: the relays share
	// conversations through the cluster under the script's permissions.
	for i, u := range urls {
		id := uuid.NewString()
		other := relaytest.Dial(t, relaytest.WithToken(urls[1-i], token), "")
		other.Send("copilot:subscribe", map[string]any{"conversationId": id})
		other.WaitFor("copilot:subscribed", nil)
		cl := relaytest.Dial(t, relaytest.WithToken(u, token), "")
		cl.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "hello", "mode": "act"})
		cl.WaitFor("copilot:delta", nil)
		other.WaitFor("copilot:delta", nil)
	}
	go func() {
		for l := range lines {
			all.WriteString(l + "\n")
		}
	}()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Fatalf("the script exited with %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the script did not stop within 60 s of SIGTERM")
	}
	// Everything it started is gone: nothing listens on its ports.
	for _, p := range append(append([]string{}, ports[0:3]...), ports[9:11]...) {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+p, time.Second); err == nil {
			c.Close()
			t.Errorf("port %s still open after the script stopped", p)
		}
	}
}

// scriptRun is a running scripts/cluster.sh that said it is ready.
type scriptRun struct {
	dir, token string
	ports      []string
	urls       []string
	cmd        *exec.Cmd
	exited     chan error
	lines      chan string // the output after "cluster: ready"
	all        strings.Builder
}

// startScript runs the script on fresh ports in a fresh folder and waits
// until it is ready. If it ends before, because a port was taken (a node's
// or a relay's log says the address is in use), it returns taken; any
// other early end fails the test.
func startScript(t *testing.T, ctx context.Context) (run *scriptRun, taken bool) {
	t.Helper()
	run = &scriptRun{dir: t.TempDir(), ports: freePorts(t, 11), exited: make(chan error, 1), lines: make(chan string, 100)}
	cmd := exec.CommandContext(ctx, script(t))
	cmd.Env = env(t, run.dir, run.ports)
	cmd.Dir = "../.."
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	run.cmd = cmd
	go func() { run.exited <- cmd.Wait(); pw.Close() }()
	go func() {
		defer close(run.lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			run.lines <- sc.Text()
		}
	}()
	for ready := false; !ready; {
		select {
		case l, ok := <-run.lines:
			if !ok {
				<-run.exited
				if portTaken(run) {
					return nil, true
				}
				skipWithoutServer(t, []byte(run.all.String()))
				t.Fatalf("the script ended before it was ready:\n%s", run.all.String())
			}
			run.all.WriteString(l + "\n")
			if m := regexp.MustCompile(`^relay \d: (ws://\S+)`).FindStringSubmatch(l); m != nil {
				run.urls = append(run.urls, m[1])
			}
			if v, ok := strings.CutPrefix(l, "token: "); ok {
				run.token = v
			}
			ready = strings.HasPrefix(l, "cluster: ready")
		case <-ctx.Done():
			cmd.Process.Signal(syscall.SIGTERM)
			<-run.exited
			t.Fatalf("the cluster was not ready in time:\n%s", run.all.String())
		}
	}
	return run, false
}

// portTaken reports whether the script's output or one of its logs says
// an address was in use.
func portTaken(run *scriptRun) bool {
	const inUse = "address already in use"
	if strings.Contains(run.all.String(), inUse) {
		return true
	}
	logs, _ := filepath.Glob(filepath.Join(run.dir, "*.log"))
	for _, f := range logs {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), inUse) {
			return true
		}
	}
	return false
}
