// Package procstat reads what the benchmarks measure of a process from
// Linux's /proc: its memory (VmRSS, VmHWM) and its CPU time. The tools
// that start a relay or a window and report what it cost (tools/load,
// tools/flood, tools/winbench) read it alike.
package procstat

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Field reads a field of /proc/PID/status in kB (VmHWM: peak RSS, VmRSS:
// RSS now).
func Field(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// ClockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports.
const ClockTicks = 100

// Ticks is the user and system CPU time the process has used, in clock
// ticks (ClockTicks a second).
func Ticks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return utime + stime, nil
}

// CPU is the user and system CPU time the process has used.
func CPU(pid int) (time.Duration, error) {
	t, err := Ticks(pid)
	if err != nil {
		return 0, err
	}
	return time.Duration(t) * time.Second / ClockTicks, nil
}
