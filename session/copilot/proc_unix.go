//go:build unix

package copilot

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the CLI as the leader of a new process group so
// signalGroup reaches the native binary the npm loader spawned.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends SIGTERM (or SIGKILL when kill) to the CLI's process
// group. Errors (the group is already gone) are of no interest.
func signalGroup(cmd *exec.Cmd, kill bool) {
	if cmd.Process == nil {
		return
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
