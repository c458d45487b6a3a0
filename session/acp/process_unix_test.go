//go:build unix

package acp_test

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/session"
)

// TestCloseStopsTheProcessGroup: what the agent started (a tool's shell, the
// native binary behind an npm launcher) goes with it.
func TestCloseStopsTheProcessGroup(t *testing.T) {
	opts, f := newFake(t)
	a := newAgent(t, opts)
	h := newHost("act")
	s := open(t, a, "c1", session.OpenOptions{}, h)
	if err := run(t, s, "orphan"); err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimPrefix(text(h.snapshot()), "child "))
	if err != nil {
		t.Fatalf("the fake said %q", text(h.snapshot()))
	}
	if gone(child) {
		t.Fatalf("child %d is not running: the check below would prove nothing", child)
	}
	a.Close()
	waitGone(t, child)
	for _, pid := range f.pids() {
		waitGone(t, pid)
	}
}

// waitGone waits until process pid has exited.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(wait)
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
	// pid (comm) STATE …; comm may hold spaces and parentheses.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// processesWithEnv lists the processes (of any user we may read) whose
// environment holds kv, from /proc; nil where there is no /proc.
func processesWithEnv(kv string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || gone(pid) {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, v := range strings.Split(string(env), "\x00") {
			if v == kv {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// waitNoProcessWithEnv waits until no process has kv in its environment.
func waitNoProcessWithEnv(t *testing.T, kv string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		pids := processesWithEnv(kv)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v (with %s) outlived the agent", pids, kv)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
