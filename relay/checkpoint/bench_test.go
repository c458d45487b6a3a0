package checkpoint

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSnapshotTurn is a turn's checkpoints in a folder the turn does
// not change (what the bench-nats load's agent does): the snapshot at its
// start and SnapshotTurn at its end, git commands all. Besides ns/op it
// reports what the process itself spent per turn, every thread counted
// (getrusage: the Go profiler does not see the runtime's sysmon thread),
// and its threads' voluntary context switches (their wake-ups): a relay
// runs these for every turn, on an otherwise idle process when it has few
// conversations (docs/scale-out.md, issue #32).
func BenchmarkSnapshotTurn(b *testing.B) {
	s, err := New(b.TempDir())
	if err != nil {
		b.Skip(err)
	}
	dir := b.TempDir()
	ctx := context.Background()
	if _, err := s.Snapshot(ctx, dir, conv); err != nil {
		b.Fatal(err)
	}
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start, err := s.Snapshot(ctx, dir, conv)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, _, err := s.SnapshotTurn(ctx, dir, conv, start); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := tv(after.Utime) + tv(after.Stime) - tv(before.Utime) - tv(before.Stime)
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(after.Nvcsw-before.Nvcsw)/float64(b.N), "wakeups/op")
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

// BenchmarkSnapshotTurnPaced is BenchmarkSnapshotTurn as a relay runs it:
// between other work, not back to back. A goroutine wakes every 4 ms (as
// the deltas of five conversations' agents do) and each turn's snapshots
// are 20 ms apart, so the process is idle most of the time, as a relay
// with a few conversations is. What it reports per turn includes the
// ticks' own cost, the same in every build.
func BenchmarkSnapshotTurnPaced(b *testing.B) {
	s, err := New(b.TempDir())
	if err != nil {
		b.Skip(err)
	}
	dir := b.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := s.Snapshot(ctx, dir, conv); err != nil {
		b.Fatal(err)
	}
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		t := time.NewTicker(4 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start, err := s.Snapshot(ctx, dir, conv)
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		if _, _, _, err := s.SnapshotTurn(ctx, dir, conv, start); err != nil {
			b.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cancel()
	<-ticked
	cpu := tv(after.Utime) + tv(after.Stime) - tv(before.Utime) - tv(before.Stime)
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(after.Nvcsw-before.Nvcsw)/float64(b.N), "wakeups/op")
}
