//go:build !linux

package agentproc

import "os/exec"

// start starts cmd. (On Linux it also arranges the agent's end with the
// relay's: spawn_linux.go. Windows ends the agent's job object when the
// relay dies; elsewhere an agent stops when its stdin closes.)
func (g *group) start(cmd *exec.Cmd) error { return cmd.Start() }

// reaped has nothing to do here.
func (g *group) reaped() {}
