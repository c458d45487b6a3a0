//go:build !unix

package agentproc

import "os/exec"

// setProcessGroup has no portable equivalent here; the agent stops when its
// stdin closes, and signalGroup kills the direct child as a last resort.
func setProcessGroup(cmd *exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, kill bool) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
