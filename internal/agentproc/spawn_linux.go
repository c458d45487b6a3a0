package agentproc

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// On Linux an agent gets SIGTERM when the process that started it dies,
// however it dies (SIGKILL, a crash, a window whose X display went away):
// without it an agent that ignores the end of its stdin (Claude Code keeps
// running, 200+ MB an open session) outlived the relay for good.
//
// Linux sends that signal when the thread that forked the agent ends, not
// the process, and Go ends an OS thread whose goroutine exits while locked
// to it; an agent forked from such a thread would be killed at a random
// moment. So agents are forked from one goroutine locked to its thread
// (agentThread), which lives while an agent it forked runs, and then ends
// with its thread.

// start starts cmd from the agents' thread, with its parent-death signal.
func (g *group) start(cmd *exec.Cmd) error {
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	return agentThread.start(cmd)
}

// reaped says that an agent start forked has been waited for.
func (g *group) reaped() { agentThread.reaped() }

// agentThread is the process's one thread that forks agents: a property of
// the process (its OS threads), so one for all Agents of any backend.
var agentThread forker

// forker runs the forks on a goroutine locked to its OS thread while at
// least one agent it forked runs; mu guards both fields.
type forker struct {
	mu      sync.Mutex
	forks   chan func() // nil while no agent runs (no goroutine either)
	running int         // agents forked and not yet reaped
}

func (f *forker) start(cmd *exec.Cmd) error {
	f.mu.Lock()
	if f.forks == nil {
		f.forks = make(chan func())
		go forkLoop(f.forks)
	}
	f.running++
	forks := f.forks
	f.mu.Unlock()
	errc := make(chan error, 1)
	forks <- func() { errc <- cmd.Start() }
	err := <-errc
	if err != nil {
		f.reaped()
	}
	return err
}

func (f *forker) reaped() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running--
	if f.running == 0 {
		close(f.forks)
		f.forks = nil
	}
}

// forkLoop forks on its own thread until forks closes. It then returns
// still locked, which ends the thread: no agent it forked runs any more.
func forkLoop(forks <-chan func()) {
	runtime.LockOSThread()
	for fork := range forks {
		fork()
	}
}
