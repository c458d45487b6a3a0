package jetstream

import (
	"context"
	"fmt"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// BenchmarkWriteCommit is a relay's group commit on a 3-node cluster (R3,
// an fsync before every ack): each op one Write of one small event to
// each of convs conversations, as the committer makes. It reports the
// writing process's CPU per append (the nodes are other processes, not
// counted) and the goroutines it started per Write (issue #32: a relay
// pays its commits' fixed cost however few conversations it has).
//
//	NATS_SERVER=... go test -run '^$' -bench WriteCommit -benchtime 2000x ./relay/history/jetstream
func BenchmarkWriteCommit(b *testing.B) {
	// Each sub-benchmark's history is a namespace, whose bucket the
	// relay user's permissions do not name.
	c := natstest.Start(b, 3, natstest.WithPermissions(natstest.Permissions{Publish: []string{">"}, Subscribe: []string{">"}}))
	nc, err := c.Connect(0)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	runs := 0 // the testing package runs a sub-benchmark's body more than once
	for _, convs := range []int{1, 3, 8} {
		b.Run(fmt.Sprintf("convs=%d", convs), func(b *testing.B) {
			ctx := context.Background()
			runs++
			ns := fmt.Sprintf("bench%d", runs)
			s, err := Open(ctx, nc, Options{Replicas: 3, Namespace: ns, Streams: 3})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ids := make([]string, convs)
			var first history.Batch
			for i := range ids {
				ids[i] = fmt.Sprintf("%s-%d", ns, i)
				first.Conversations = append(first.Conversations, meta(ids[i], 1))
				first.Events = append(first.Events, frameEvent(ids[i], 1))
			}
			if err := s.Write(ctx, first); err != nil {
				b.Fatal(err)
			}
			seq := int64(1)
			cpu0, g0 := processCPU(b), goroutinesCreated()
			start := time.Now()
			b.ResetTimer()
			for range b.N {
				seq++
				var batch history.Batch
				for _, id := range ids {
					batch.Events = append(batch.Events, frameEvent(id, seq))
				}
				if err := s.Write(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			wall := time.Since(start)
			cpu, g := processCPU(b)-cpu0, goroutinesCreated()-g0
			appends := float64(b.N * convs)
			b.ReportMetric(float64(cpu.Microseconds())/appends, "cpu-µs/append")
			b.ReportMetric(float64(g)/float64(b.N), "goroutines/write")
			b.ReportMetric(appends/wall.Seconds(), "appends/s")
		})
	}
}

// processCPU is the CPU the process has used, user and system.
func processCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// goroutinesCreated is how many goroutines the process has started.
func goroutinesCreated() uint64 {
	sample := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}
