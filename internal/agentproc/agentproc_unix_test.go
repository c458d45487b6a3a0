//go:build unix

package agentproc

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStopReachesTheGroup: an agent that ignores EOF and SIGTERM is killed,
// and so is what it started.
func TestStopReachesTheGroup(t *testing.T) {
	a := start(t, "stubborn", nil, nil)
	var pids []int
	for _, f := range strings.Fields(a.line(t)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if len(pids) != 2 || pids[0] != a.Pid() {
		t.Fatalf("pids %v, agent %d", pids, a.Pid())
	}
	began := time.Now()
	a.Stop()
	if d := time.Since(began); d < 2*grace {
		t.Errorf("Stop took %v: it did not wait for the EOF and the SIGTERM", d)
	}
	for _, pid := range pids {
		waitGone(t, pid)
	}
}

// TestExitReachesTheGroup: what an agent left in its group when it exited
// is killed too.
func TestExitReachesTheGroup(t *testing.T) {
	a := start(t, "stubborn", nil, nil)
	var pids []int
	for _, f := range strings.Fields(a.line(t)) {
		pid, _ := strconv.Atoi(f)
		pids = append(pids, pid)
	}
	if err := syscall.Kill(a.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDone(t, a.Process)
	if err := a.Err(); err == nil || !strings.Contains(err.Error(), "exited unexpectedly (signal: killed)") {
		t.Errorf("Err = %v", err)
	}
	waitGone(t, pids[1])
}

// waitGone waits until process pid has exited.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d outlived the agent", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gone reports whether pid has exited: it does not exist, or it is a zombie
// waiting for whoever inherited it to reap it.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return strings.HasPrefix(strings.TrimSpace(rest), "Z")
}
