package natstest_test

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

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
