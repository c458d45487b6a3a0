//go:build !unix && !windows

package agentproc

import "os/exec"

// group has no portable equivalent here; the agent stops when its stdin
// closes, and signal kills the direct child as a last resort.
type group struct{}

func (g *group) prepare(cmd *exec.Cmd)    {}
func (g *group) join(cmd *exec.Cmd) error { return nil }
func (g *group) release()                 {}

func (g *group) signal(cmd *exec.Cmd, kill bool) {
	if kill && cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
