package main

import (
	"os"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/procstat"
)

// loadAverage is the machine's load average over 1, 5 and 15 minutes: the
// figures depend on what else the machine runs.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], "/")
}

// relayUsage adds up the CPU of the relay processes of a run (more than one
// when the relay is killed and restarted, or with -nats) and keeps the
// highest peak RSS of one.
type relayUsage struct {
	cpu     time.Duration
	start   map[int]time.Duration // by pid: CPU time at begin
	peakKiB int64
}

func (u *relayUsage) begin(p *relayProc) {
	u.start[p.Pid()], _ = procstat.CPU(p.Pid())
}

// end adds the CPU used since begin and notes the peak RSS.
func (u *relayUsage) end(p *relayProc) {
	pid := p.Pid()
	if now, err := procstat.CPU(pid); err == nil {
		u.cpu += now - u.start[pid]
		u.start[pid] = now
	}
	u.peak(p)
}

func (u *relayUsage) peak(p *relayProc) {
	if kib, err := procstat.Field(p.Pid(), "VmHWM"); err == nil {
		u.peakKiB = max(u.peakKiB, kib)
	}
}

// cpuPressure is the kernel's CPU pressure (PSI): the share of the last 10
// and 60 s in which some runnable task waited for a CPU. Near 100 % means
// the machine was saturated and latencies include waiting for a core.
func cpuPressure() string {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return "unknown"
	}
	var avg10, avg60 string
	for _, f := range strings.Fields(strings.SplitN(string(b), "\n", 2)[0]) {
		if v, ok := strings.CutPrefix(f, "avg10="); ok {
			avg10 = v
		}
		if v, ok := strings.CutPrefix(f, "avg60="); ok {
			avg60 = v
		}
	}
	if avg10 == "" {
		return "unknown"
	}
	return avg10 + "%/" + avg60 + "%"
}
