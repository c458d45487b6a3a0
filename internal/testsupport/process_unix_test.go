//go:build unix

package testsupport

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestMain lets the test binary be the process the tests wait for.
func TestMain(m *testing.M) {
	if os.Getenv("TESTSUPPORT_TEST_SLEEP") == "1" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// sleeper starts a process with marker in its environment.
func sleeper(t *testing.T, marker string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TESTSUPPORT_TEST_SLEEP=1", marker, "GORACE=atexit_sleep_ms=0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

func TestProcesses(t *testing.T) {
	marker := "TESTSUPPORT_TEST_MARKER=" + strconv.Itoa(os.Getpid())
	cmd := sleeper(t, marker)
	pid := cmd.Process.Pid
	if Gone(pid) {
		t.Fatalf("process %d is gone while it runs", pid)
	}
	if runtime.GOOS == "linux" {
		deadline := time.Now().Add(10 * time.Second)
		for !slices.Contains(ProcessesWithEnv(marker), pid) {
			// The environment shows in /proc once the process has exec'd.
			if time.Now().After(deadline) {
				t.Fatalf("ProcessesWithEnv(%s) = %v, want %d", marker, ProcessesWithEnv(marker), pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// Killed and not yet reaped, it is a zombie: gone all the same.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	WaitGone(t, pid, 10*time.Second)
	WaitNoProcessWithEnv(t, marker, 10*time.Second)
	cmd.Wait()
	if !Gone(pid) {
		t.Errorf("process %d is not gone once reaped", pid)
	}
}

func TestWaitGoneFails(t *testing.T) {
	marker := "TESTSUPPORT_TEST_MARKER=" + strconv.Itoa(os.Getpid()) + "-fails"
	cmd := sleeper(t, marker)
	f := &fakeTB{}
	f.run(func(tb testing.TB) { WaitGone(tb, cmd.Process.Pid, 50*time.Millisecond) })
	if want := "process " + strconv.Itoa(cmd.Process.Pid) + " outlived the agent"; f.fatal != want {
		t.Errorf("fatal %q, want %q", f.fatal, want)
	}
	if runtime.GOOS == "linux" {
		f = &fakeTB{}
		f.run(func(tb testing.TB) { WaitNoProcessWithEnv(tb, marker, 500*time.Millisecond) })
		if f.fatal == "" {
			t.Error("WaitNoProcessWithEnv did not fail with a process running")
		}
	}
}
