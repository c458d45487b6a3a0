package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// benchFrame is a typical streamed delta, about 120 bytes.
func benchFrame(seq int64) []byte {
	return fmt.Appendf(nil, `{"type":"copilot:delta","data":{"conversationId":"bench","seq":%d,"messageId":"msg-0001","content":"lorem ipsum dolor "}}`, seq)
}

// BenchmarkWrite commits batches as the relay's group commit does: a batch
// of events and the conversation row with its new last seq. events/s is
// the figure to compare with the in-memory store.
func BenchmarkWrite(b *testing.B) {
	for _, store := range []string{"memory", "FULL", "NORMAL"} {
		for _, size := range []int{1, 50, 500} {
			b.Run(fmt.Sprintf("store=%s/batch=%d", store, size), func(b *testing.B) {
				var s history.Store
				if store == "memory" {
					s = history.NewMemory()
				} else {
					s = openStore(b, b.TempDir(), Options{Synchronous: store})
				}
				defer s.Close()
				benchWrite(b, s, size)
			})
		}
	}
}

func benchWrite(b *testing.B, s history.Store, size int) {
	ctx := context.Background()
	c := history.Conversation{ID: "bench", Title: "benchmark", Mode: "act", CreatedAt: time.Now(), Streaming: true}
	batch := history.Batch{Events: make([]history.Event, size), Conversations: []history.Conversation{c}}
	frames := make([][]byte, size)
	for i := range frames {
		frames[i] = benchFrame(int64(i))
	}
	var seq int64
	b.SetBytes(int64(size * len(frames[0])))
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		for i := range batch.Events {
			seq++
			batch.Events[i] = history.Event{ConversationID: "bench", Seq: seq, Type: "copilot:delta", Frame: frames[i]}
		}
		batch.Conversations[0].LastSeq = seq
		batch.Conversations[0].UpdatedAt = time.Now()
		if err := s.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(seq)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(b.Elapsed().Seconds()*1e6/float64(b.N), "µs/commit")
	// CPU time per event, all goroutines included: steadier than the
	// wall clock on a machine others are using.
	b.ReportMetric(float64(cpuTime()-cpu0)/1e3/float64(seq), "cpu-µs/event")
}

// BenchmarkReplay reads a conversation's history from the start, as a
// subscribe with sinceSeq 0 does.
func BenchmarkReplay(b *testing.B) {
	const n = 20000
	s := openStore(b, b.TempDir(), Options{})
	defer s.Close()
	fill(b, s, "bench", n)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		count := 0
		if err := s.Events(ctx, "bench", 0, func(history.Event) error { count++; return nil }); err != nil || count != n {
			b.Fatal(count, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
}

func fill(b testing.TB, s history.Store, id string, n int) {
	b.Helper()
	ctx := context.Background()
	c := history.Conversation{ID: id, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	for from := 1; from <= n; from += 500 {
		var batch history.Batch
		for seq := from; seq < from+500 && seq <= n; seq++ {
			batch.Events = append(batch.Events, history.Event{ConversationID: id, Seq: int64(seq), Type: "copilot:delta", Frame: benchFrame(int64(seq))})
		}
		c.LastSeq = batch.Events[len(batch.Events)-1].Seq
		batch.Conversations = []history.Conversation{c}
		if err := s.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen measures Open of an existing history of 300,000 events,
// with and without the quick_check it runs by default.
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	s := openStore(b, dir, Options{Synchronous: "NORMAL"})
	for i := range 6 {
		fill(b, s, fmt.Sprint("c", i), 50000)
	}
	s.Close()
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		b.Fatal(err)
	}
	for _, skip := range []bool{false, true} {
		b.Run(fmt.Sprintf("skipCheck=%v", skip), func(b *testing.B) {
			for b.Loop() {
				s := openStore(b, dir, Options{SkipCheck: skip})
				s.Close()
			}
			b.ReportMetric(float64(fi.Size())/(1<<20), "file-MiB")
		})
	}
}

// BenchmarkReplayWhileWriting replays a 5,000-event conversation from
// 1, 16 or 64 goroutines at once (windows resuming after a restart) while
// another conversation streams a batch of 50 events every 2 ms, with reads
// on their own pool of connections or on the writer's one connection. It
// reports the replay rate and how long the streaming Writes took (p50,
// p99): what a live conversation's subscribers wait while others resume.
func BenchmarkReplayWhileWriting(b *testing.B) {
	for _, replays := range []int{1, 16, 64} {
		for _, v := range []struct {
			name string
			opts Options
		}{
			{"pool=shared", Options{sharedPool: true}},
			{"pool=separate/conns=1", Options{ReadConns: 1}},
			{"pool=separate/conns=2", Options{ReadConns: 2}},
		} {
			b.Run(fmt.Sprintf("replays=%d/%s", replays, v.name), func(b *testing.B) {
				benchReplayWhileWriting(b, v.opts, replays)
			})
		}
	}
}

func benchReplayWhileWriting(b *testing.B, opts Options, replays int) {
	const n = 5000
	s := openStore(b, b.TempDir(), opts)
	defer s.Close()
	fill(b, s, "old", n)
	ctx, cancel := context.WithCancel(context.Background())
	latencies := make(chan []time.Duration)
	go func() {
		c := history.Conversation{ID: "live", CreatedAt: time.Now()}
		var seq int64
		var lat []time.Duration
		defer func() { latencies <- lat }()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var batch history.Batch
			for range 50 {
				seq++
				batch.Events = append(batch.Events, history.Event{ConversationID: "live", Seq: seq, Type: "copilot:delta", Frame: benchFrame(seq)})
			}
			c.LastSeq, c.UpdatedAt = seq, time.Now()
			batch.Conversations = []history.Conversation{c}
			start := time.Now()
			if err := s.Write(context.Background(), batch); err != nil {
				b.Error(err)
				return
			}
			lat = append(lat, time.Since(start))
		}
	}()
	b.ResetTimer()
	b.SetParallelism((replays + 1) / 2)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			count := 0
			if err := s.Events(context.Background(), "old", 0, func(history.Event) error { count++; return nil }); err != nil || count != n {
				b.Error(count, err)
				return
			}
		}
	})
	elapsed := b.Elapsed().Seconds()
	cancel()
	lat := <-latencies
	slices.Sort(lat)
	b.ReportMetric(float64(n*b.N)/elapsed, "replayed/s")
	if len(lat) > 0 {
		b.ReportMetric(float64(len(lat)*50)/elapsed, "written/s")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "write-p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "write-p99-µs")
	}
}
