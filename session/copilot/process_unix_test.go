//go:build unix

package copilot_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitGone waits until process pid no longer exists.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d still exists", pid)
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
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
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
