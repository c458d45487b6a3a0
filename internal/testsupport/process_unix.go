//go:build unix

package testsupport

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Gone reports whether process pid has exited: it does not exist, or it is
// a zombie waiting for whoever inherited it to reap it.
func Gone(pid int) bool {
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

// WaitGone waits up to within until process pid has exited (see Gone), and
// fails the test if it has not.
func WaitGone(t testing.TB, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !Gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d outlived the agent", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ProcessesWithEnv lists the processes (of any user we may read) that have
// not exited and whose environment holds kv, from /proc; nil where there is
// no /proc.
func ProcessesWithEnv(kv string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || Gone(pid) {
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

// WaitNoProcessWithEnv waits up to within until no process has kv in its
// environment, and fails the test if some still do.
func WaitNoProcessWithEnv(t testing.TB, kv string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		pids := ProcessesWithEnv(kv)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v (with %s) outlived the agent", pids, kv)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
