//go:build unix

package agentproc

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the agent as the leader of a new process group, so
// signalGroup reaches everything it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends SIGTERM (or SIGKILL when kill) to the agent's process
// group. An error (the group is gone already) is of no interest.
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
