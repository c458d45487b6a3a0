//go:build unix

package agentproc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
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
		testsupport.WaitGone(t, pid, 10*time.Second)
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
	testsupport.WaitGone(t, pids[1], 10*time.Second)
}

// TestNotRunnable: a missing executable and one that is not executable
// (a Unix file mode) cannot run, as Start and exec.LookPath say it; a pipe error is
// something else.
func TestNotRunnable(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, missing := Start(Config{Path: filepath.Join(dir, "missing"), Grace: grace})
	_, notExec := Start(Config{Path: plain, Grace: grace})
	_, notOnPath := exec.LookPath("no-such-agent-on-any-path")
	for name, err := range map[string]error{"missing": missing, "not executable": notExec, "not on PATH": notOnPath} {
		if err == nil || !NotRunnable(err) {
			t.Errorf("%s: NotRunnable(%v) = false", name, err)
		}
	}
	// Only the file that is there but not executable is NotExecutable:
	// the backends name it rather than say to install their agent.
	if !NotExecutable(notExec) || NotExecutable(missing) || NotExecutable(notOnPath) {
		t.Errorf("NotExecutable: not executable %v, missing %v, not on PATH %v", NotExecutable(notExec), NotExecutable(missing), NotExecutable(notOnPath))
	}
	if NotRunnable(&PipeError{Pipe: "stdin", Err: os.ErrClosed}) {
		t.Error("a pipe error is NotRunnable")
	}
}
