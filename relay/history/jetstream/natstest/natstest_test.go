package natstest_test

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// StartProcess starts a cluster a program can use (it answers as the relay
// user), and its stop kills the nodes and removes their files.
func TestStartProcess(t *testing.T) {
	if _, err := natstest.Binary(); err != nil {
		t.Skip(err)
	}
	pattern := filepath.Join(os.TempDir(), "natstest-process-*", "n1.conf")
	before, _ := filepath.Glob(pattern)
	c, stop, err := natstest.StartProcess(1, "natstest-process-*")
	if err != nil {
		t.Fatal(err)
	}
	nc, err := c.Connect(0)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	nc.Close()
	pid := c.Nodes[0].PID()
	all, _ := filepath.Glob(pattern)
	conf := slices.DeleteFunc(all, func(f string) bool { return slices.Contains(before, f) }) // this run's
	stop()
	if pid == 0 || syscall.Kill(pid, 0) == nil {
		t.Errorf("node process %d still runs after stop", pid)
	}
	for _, f := range conf {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s is left after stop", f)
		}
	}
	if len(conf) == 0 {
		t.Error("found no node configuration under the temporary directory")
	}
}

// What would skip or fail a test is an error for a program, not a panic.
func TestStartProcessError(t *testing.T) {
	t.Setenv("NATS_SERVER", filepath.Join(t.TempDir(), "no-such-nats-server"))
	c, stop, err := natstest.StartProcess(3, "natstest-process-*")
	if err == nil {
		stop()
		t.Fatalf("started a cluster %v without a nats-server binary", c)
	}
	t.Log(err)
}

// The nodes' user has the relay's permissions unless an option gives
// others: a publish outside them is refused, one inside allowed. Each
// cluster its own options: nothing is shared between the two.
func TestPermissionsOption(t *testing.T) {
	t.Parallel()
	violation := func(c *natstest.Cluster) error {
		t.Helper()
		errs := make(chan error, 1)
		nc, err := c.Connect(0)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		})
		if err := nc.Publish("elsewhere.subject", []byte("x")); err != nil {
			t.Fatal(err)
		}
		// A round trip after the publish: its refusal comes before the pong.
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errs:
			return err
		case <-time.After(time.Second):
			return nil
		}
	}
	relay := natstest.Start(t, 1)
	if err := violation(relay); err == nil || !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
		t.Fatalf("the relay user published outside its subjects: %v", err)
	}
	open := natstest.RelayPermissions()
	open.Publish = append(open.Publish, "elsewhere.>")
	other := natstest.Start(t, 1, natstest.WithPermissions(open), natstest.SyncInterval("1s"))
	if err := violation(other); err != nil {
		t.Fatalf("a user given elsewhere.> could not publish there: %v", err)
	}
}

// A port taken between being chosen and being bound (by another test's
// listener or outgoing connection) makes that node exit; Start then
// starts the cluster again on other ports instead of failing the test.
func TestStartAgainWhenAPortIsTaken(t *testing.T) {
	if _, err := natstest.Binary(); err != nil {
		t.Skip(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	picks := 0
	pick := func(tb natstest.TB, n int) []int {
		picks++
		ports := natstest.FreePorts(tb, n)
		if picks == 1 {
			ports[n-1] = taken.Addr().(*net.TCPAddr).Port // the last node's route port
		}
		return ports
	}
	c := natstest.Start(t, 3, natstest.PickPorts(pick))
	if picks != 2 {
		t.Errorf("ports were chosen %d times, want 2 (one start thrown away)", picks)
	}
	for i, node := range c.Nodes {
		if node.ClusterPort == taken.Addr().(*net.TCPAddr).Port {
			t.Errorf("node %d kept the taken port", i)
		}
	}
	nc, err := c.Connect(0)
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
}
