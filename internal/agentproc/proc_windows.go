//go:build windows

package agentproc

import (
	"fmt"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// group is a job object holding the agent and every process it starts
// (npm's launcher, the native agent, the shells its tools run): Windows has
// no process groups to signal, and killing the direct child alone would
// leave the rest running.
type group struct {
	job windows.Handle // 0 until join succeeds
}

// prepare starts the agent without a console window of its own: the app is
// a GUI program, and each console program it starts would otherwise flash
// a black window on the user's screen.
func (g *group) prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		HideWindow:    true,
		CreationFlags: windows.CREATE_NO_WINDOW,
	}
}

// join puts the started agent into a new job object that kills what it
// holds when its last handle closes (release), so nothing the agent started
// outlives it even if the relay itself is killed. A process the agent
// started in the instant before join is not in the job; agents start their
// children well after their own start, so this is taken as it is.
func (g *group) join(cmd *exec.Cmd) error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fmt.Errorf("creating a job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("setting the job object's limits: %w", err)
	}
	proc, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("opening the agent's process: %w", err)
	}
	defer windows.CloseHandle(proc)
	if err := windows.AssignProcessToJobObject(job, proc); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("adding the agent to a job object: %w", err)
	}
	g.job = job
	return nil
}

// signal ends the whole job when kill; a gentle stop has no signal to send
// on Windows (the agent's stdin, closed before, is its request to stop).
func (g *group) signal(cmd *exec.Cmd, kill bool) {
	if !kill {
		return
	}
	if g.job != 0 {
		_ = windows.TerminateJobObject(g.job, 1)
		return
	}
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// release closes the job, which kills whatever is still in it.
func (g *group) release() {
	if g.job != 0 {
		windows.CloseHandle(g.job)
		g.job = 0
	}
}
