//go:build linux

package procstat

import (
	"os"
	"testing"
	"time"
)

// TestSelf reads this process's memory and CPU: both there, the peak at
// least the resident size, and the CPU growing with work done.
func TestSelf(t *testing.T) {
	pid := os.Getpid()
	rss, err := Field(pid, "VmRSS")
	if err != nil || rss <= 0 {
		t.Fatalf("VmRSS = %d, %v", rss, err)
	}
	peak, err := Field(pid, "VmHWM")
	if err != nil || peak < rss {
		t.Fatalf("VmHWM = %d, %v (VmRSS %d)", peak, err, rss)
	}
	if _, err := Field(pid, "NoSuchField"); err == nil {
		t.Error("a field that is not there read without an error")
	}
	before, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		if now, _ := CPU(pid); now > before {
			return
		}
		for i := 0; i < 1e6; i++ {
			_ = i * i
		}
	}
	t.Errorf("the CPU time stayed at %v through 10 s of work", before)
}

func TestNoProcess(t *testing.T) {
	if _, err := Ticks(-1); err == nil {
		t.Error("Ticks of no process: no error")
	}
	if _, err := Field(-1, "VmRSS"); err == nil {
		t.Error("Field of no process: no error")
	}
}
