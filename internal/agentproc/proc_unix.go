//go:build unix

package agentproc

import (
	"os/exec"
	"syscall"
)

// group is the agent's process group: on Unix the agent leads a new one,
// so a signal to the group reaches everything it started.
type group struct{}

// prepare makes the agent the leader of a new process group.
func (g *group) prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// join has nothing to do on Unix: the group exists from the agent's start.
func (g *group) join(cmd *exec.Cmd) error { return nil }

// signal sends SIGTERM (or SIGKILL when kill) to the agent's process group.
// An error (the group is gone already) is of no interest.
func (g *group) signal(cmd *exec.Cmd, kill bool) {
	if cmd.Process == nil {
		return
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}

// release has nothing to free on Unix.
func (g *group) release() {}
