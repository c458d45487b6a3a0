package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/queue"
)

// short is how long a test waits to see that something does not happen.
const short = 50 * time.Millisecond

// long bounds the waits for what must happen.
const long = 10 * time.Second

func byteLen(b []byte) int { return len(b) }

func bytesQueue(maxLen, maxBytes int) *queue.Queue[[]byte] {
	return queue.New(queue.Options[[]byte]{MaxLen: maxLen, MaxBytes: maxBytes, Size: byteLen})
}

// pop takes what is queued, failing the test if that waits.
func pop[T any](t *testing.T, q *queue.Queue[T]) []T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	items, err := q.PopAll(ctx, nil)
	if err != nil {
		t.Fatalf("PopAll: %v", err)
	}
	return items
}

// async runs f on a goroutine; its error arrives on the channel.
func async(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

func waitErr(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(long):
		t.Fatalf("still waiting after %s", long)
		return nil
	}
}

func stillWaiting(t *testing.T, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("returned %v; it should still wait", err)
	case <-time.After(short):
	}
}

func TestTryPushBounds(t *testing.T) {
	tests := []struct {
		name     string
		maxLen   int
		maxBytes int
		sizes    []int
		want     []error
	}{
		{"unbounded", 0, 0, []int{5, 1 << 20, 0}, []error{nil, nil, nil}},
		{"by count", 2, 0, []int{1, 1, 1}, []error{nil, nil, queue.ErrFull}},
		{"by bytes", 0, 10, []int{4, 6, 1}, []error{nil, nil, queue.ErrFull}},
		{"bytes exactly at the bound", 0, 10, []int{10, 0}, []error{nil, nil}},
		{"a full item does not stop a smaller one", 0, 10, []int{8, 3, 2}, []error{nil, queue.ErrFull, nil}},
		{"an item over the bound never fits", 5, 10, []int{11}, []error{queue.ErrFull}},
		{"both bounds", 3, 10, []int{2, 2, 2, 1}, []error{nil, nil, nil, queue.ErrFull}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := bytesQueue(tt.maxLen, tt.maxBytes)
			var kept [][]byte
			for i, n := range tt.sizes {
				item := make([]byte, n)
				err := q.TryPush(item)
				if !errors.Is(err, tt.want[i]) {
					t.Fatalf("push %d (%d bytes): %v, want %v", i, n, err, tt.want[i])
				}
				if err == nil {
					kept = append(kept, item)
				}
			}
			wantBytes := 0
			for _, k := range kept {
				wantBytes += len(k)
			}
			if s := q.Stats(); s.Len != len(kept) || s.Bytes != wantBytes || s.Closed {
				t.Fatalf("stats %+v, want %d items, %d bytes, open", s, len(kept), wantBytes)
			}
		})
	}
}

// With Count, an item counts as that many against MaxLen and WaitLen and
// in Len: a run of frames queued as one item is bounded by its frames.
func TestCountWeighsItems(t *testing.T) {
	runs := queue.New(queue.Options[[]string]{
		MaxLen:  5,
		WaitLen: 3,
		Count:   func(run []string) int { return len(run) },
	})
	if err := runs.TryPush([]string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if err := runs.TryPushAll([][]string{{"c"}, {"d", "e"}}); err != nil {
		t.Fatal(err)
	}
	if err := runs.TryPush([]string{"f"}); !errors.Is(err, queue.ErrFull) {
		t.Fatalf("a sixth thing past MaxLen 5: %v, want ErrFull", err)
	}
	if s := runs.Stats(); s.Len != 5 || runs.Len() != 5 {
		t.Fatalf("Stats().Len %d, Len() %d: want the 5 things in 3 items", s.Len, runs.Len())
	}
	pushed := async(func() error { return runs.Push(context.Background(), []string{"f"}) })
	stillWaiting(t, pushed) // 5 things queued: at WaitLen 3 or over
	if got := pop(t, runs); len(got) != 3 {
		t.Fatalf("popped %d items, want 3", len(got))
	}
	if err := waitErr(t, pushed); err != nil {
		t.Fatal(err)
	}
	if err := runs.TryPush([]string{"g", "h", "i", "j"}); err != nil {
		t.Fatalf("4 things after 1, within MaxLen 5: %v", err)
	}
	if runs.Len() != 5 {
		t.Fatalf("Len() %d after the pop and 1 + 4 things, want 5", runs.Len())
	}
	// A run of more things than MaxLen never fits.
	pop(t, runs)
	if err := runs.TryPush(make([]string, 6)); !errors.Is(err, queue.ErrFull) {
		t.Fatalf("a run of 6 past MaxLen 5: %v, want ErrFull", err)
	}
}

func TestTryPushAllIsAllOrNothing(t *testing.T) {
	tests := []struct {
		name     string
		maxLen   int
		maxBytes int
		first    []int // pushed one by one beforehand
		batch    []int
		want     error
	}{
		{"fits", 4, 100, []int{1}, []int{1, 1, 1}, nil},
		{"one too many", 4, 100, []int{1, 1}, []int{1, 1, 1}, queue.ErrFull},
		{"too many bytes", 10, 10, []int{5}, []int{3, 3}, queue.ErrFull},
		{"empty batch", 1, 1, []int{1}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := bytesQueue(tt.maxLen, tt.maxBytes)
			for _, n := range tt.first {
				if err := q.TryPush(make([]byte, n)); err != nil {
					t.Fatal(err)
				}
			}
			var batch [][]byte
			for _, n := range tt.batch {
				batch = append(batch, make([]byte, n))
			}
			err := q.TryPushAll(batch)
			if !errors.Is(err, tt.want) {
				t.Fatalf("TryPushAll: %v, want %v", err, tt.want)
			}
			want := len(tt.first)
			if err == nil {
				want += len(tt.batch)
			}
			if n := q.Len(); n != want {
				t.Fatalf("%d items queued, want %d", n, want)
			}
		})
	}
}

func TestPopAllIsFIFOAndReusesTheArray(t *testing.T) {
	q := queue.New(queue.Options[int]{MaxLen: 100})
	for i := range 5 {
		if err := q.TryPush(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.TryPushAll([]int{5, 6}); err != nil {
		t.Fatal(err)
	}
	got := pop(t, q)
	if fmt.Sprint(got) != "[0 1 2 3 4 5 6]" {
		t.Fatalf("popped %v", got)
	}
	if q.Len() != 0 {
		t.Fatalf("%d left after PopAll", q.Len())
	}

	// A consumer handing back its batch allocates nothing in a steady state.
	ctx := context.Background()
	batch := got
	allocs := testing.AllocsPerRun(100, func() {
		for i := range 7 {
			_ = q.TryPush(i)
		}
		var err error
		batch, err = q.PopAll(ctx, batch)
		if err != nil || len(batch) != 7 {
			t.Fatalf("PopAll: %v, %v", batch, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per push-and-pop round, want 0", allocs)
	}
}

// The array handed back is cleared at once, while PopAll waits, so that an
// idle consumer holds no reference to what it sent.
func TestPopAllClearsTheArrayHandedBack(t *testing.T) {
	q := queue.New(queue.Options[*int]{})
	_ = q.TryPush(new(int))
	batch := pop(t, q)
	ctx, cancel := context.WithCancel(context.Background())
	popped := async(func() error {
		_, err := q.PopAll(ctx, batch)
		return err
	})
	stillWaiting(t, popped)
	cancel()
	if err := waitErr(t, popped); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if batch[0] != nil {
		t.Fatal("the array handed back still holds an item")
	}
}

func TestPushWaitsWhileFull(t *testing.T) {
	q := queue.New(queue.Options[int]{MaxLen: 2})
	ctx := context.Background()
	for i := range 2 {
		if err := q.Push(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	pushed := async(func() error { return q.Push(ctx, 2) })
	stillWaiting(t, pushed)
	if got := pop(t, q); fmt.Sprint(got) != "[0 1]" {
		t.Fatalf("popped %v", got)
	}
	if err := waitErr(t, pushed); err != nil {
		t.Fatalf("Push after the pop: %v", err)
	}
	if got := pop(t, q); fmt.Sprint(got) != "[2]" {
		t.Fatalf("popped %v", got)
	}
}

// Push waits at WaitLen and WaitBytes while TryPush still uses the room up to
// the bounds.
func TestPushWaitsEarlierThanTheBound(t *testing.T) {
	tests := []struct {
		name string
		opts queue.Options[[]byte]
		fill []int // pushed with Push, none of which waits
		next int   // this Push waits
		try  []int // these TryPushes still succeed
	}{
		{"by count", queue.Options[[]byte]{MaxLen: 4, WaitLen: 2}, []int{1, 1}, 1, []int{1, 1}},
		{"by bytes", queue.Options[[]byte]{MaxBytes: 100, WaitBytes: 10}, []int{9, 1}, 1, []int{50, 40}},
		// The bytes queued count, not the item's: a big item goes in
		// while there is room, even past WaitBytes.
		{"a big item enters below the level", queue.Options[[]byte]{MaxBytes: 100, WaitBytes: 10}, []int{9, 50}, 1, []int{41}},
		{"a WaitLen above MaxLen is MaxLen", queue.Options[[]byte]{MaxLen: 2, WaitLen: 5}, []int{1, 1}, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Size = byteLen
			q := queue.New(tt.opts)
			ctx := context.Background()
			for _, n := range tt.fill {
				ctx, cancel := context.WithTimeout(ctx, long)
				err := q.Push(ctx, make([]byte, n))
				cancel()
				if err != nil {
					t.Fatalf("Push while below the level: %v", err)
				}
			}
			pushed := async(func() error { return q.Push(ctx, make([]byte, tt.next)) })
			stillWaiting(t, pushed)
			for _, n := range tt.try {
				if err := q.TryPush(make([]byte, n)); err != nil {
					t.Fatalf("TryPush of %d bytes above the level: %v", n, err)
				}
			}
			pop(t, q)
			if err := waitErr(t, pushed); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// An item over MaxBytes fails TryPush but Push lets it into an empty queue:
// it would otherwise wait forever.
func TestPushTakesAnItemOverTheByteBound(t *testing.T) {
	q := bytesQueue(0, 10)
	big := make([]byte, 11)
	if err := q.TryPush(big); !errors.Is(err, queue.ErrFull) {
		t.Fatalf("TryPush of an item over MaxBytes: %v, want ErrFull", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if err := q.Push(ctx, big); err != nil {
		t.Fatalf("Push of an item over MaxBytes into an empty queue: %v", err)
	}
	if s := q.Stats(); s.Len != 1 || s.Bytes != 11 {
		t.Fatalf("stats %+v", s)
	}
}

func TestPushCancelled(t *testing.T) {
	q := queue.New(queue.Options[int]{MaxLen: 1})
	_ = q.TryPush(0)
	ctx, cancel := context.WithCancel(context.Background())
	pushed := async(func() error { return q.Push(ctx, 1) })
	stillWaiting(t, pushed)
	cancel()
	if err := waitErr(t, pushed); !errors.Is(err, context.Canceled) {
		t.Fatalf("Push after cancel: %v, want context.Canceled", err)
	}
	if got := pop(t, q); fmt.Sprint(got) != "[0]" {
		t.Fatalf("a cancelled Push queued its item: %v", got)
	}
	// An ended context with room to spare does not stop the push.
	if err := q.Push(ctx, 2); err != nil {
		t.Fatalf("Push with room and a done context: %v", err)
	}
}

func TestWaitRoom(t *testing.T) {
	q := queue.New(queue.Options[int]{MaxLen: 4, WaitLen: 1})
	ctx := context.Background()
	if err := q.WaitRoom(ctx); err != nil {
		t.Fatalf("WaitRoom on an empty queue: %v", err)
	}
	_ = q.TryPush(0)
	waited := async(func() error { return q.WaitRoom(ctx) })
	stillWaiting(t, waited)
	pop(t, q)
	if err := waitErr(t, waited); err != nil {
		t.Fatal(err)
	}

	_ = q.TryPush(0)
	cctx, cancel := context.WithCancel(ctx)
	waited = async(func() error { return q.WaitRoom(cctx) })
	stillWaiting(t, waited)
	cancel()
	if err := waitErr(t, waited); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitRoom after cancel: %v", err)
	}

	waited = async(func() error { return q.WaitRoom(ctx) })
	stillWaiting(t, waited)
	q.Close()
	if err := waitErr(t, waited); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("WaitRoom after Close: %v, want ErrClosed", err)
	}
}

func TestPopAllWaitsAndIsCancelled(t *testing.T) {
	q := queue.New(queue.Options[int]{})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan []int, 1)
	popped := async(func() error {
		items, err := q.PopAll(ctx, nil)
		got <- items
		return err
	})
	stillWaiting(t, popped)
	_ = q.TryPush(7)
	if err := waitErr(t, popped); err != nil {
		t.Fatal(err)
	}
	if items := <-got; fmt.Sprint(items) != "[7]" {
		t.Fatalf("popped %v", items)
	}

	popped = async(func() error {
		_, err := q.PopAll(ctx, nil)
		return err
	})
	stillWaiting(t, popped)
	cancel()
	if err := waitErr(t, popped); !errors.Is(err, context.Canceled) {
		t.Fatalf("PopAll after cancel: %v", err)
	}
}

// WaitLen returns once the queue holds n items (counted as Count counts
// them), at once if it does already, on Close, or with ctx's error; TakeAll
// then appends them to the consumer's slice without waiting, and makes room.
func TestWaitLenAndTakeAll(t *testing.T) {
	q := queue.New(queue.Options[int]{MaxLen: 4, Count: func(v int) int { return max(v, 1) }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waited := async(func() error { return q.WaitLen(ctx, 3) })
	stillWaiting(t, waited)
	_ = q.TryPush(1)
	stillWaiting(t, waited)
	_ = q.TryPush(2) // counts 2: three in all
	if err := waitErr(t, waited); err != nil {
		t.Fatal(err)
	}
	if err := q.WaitLen(ctx, 3); err != nil {
		t.Fatalf("WaitLen with enough queued: %v", err)
	}
	if err := q.TryPush(2); !errors.Is(err, queue.ErrFull) {
		t.Fatalf("TryPush over the bound: %v", err)
	}
	got := q.TakeAll([]int{0})
	if fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("TakeAll: %v", got)
	}
	if got := q.TakeAll(nil); len(got) != 0 {
		t.Fatalf("TakeAll of an empty queue: %v", got)
	}
	if err := q.TryPush(4); err != nil {
		t.Fatalf("TryPush after TakeAll: %v", err)
	}
	_ = pop(t, q)

	waited = async(func() error { return q.WaitLen(ctx, 2) })
	stillWaiting(t, waited)
	cancel()
	if err := waitErr(t, waited); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitLen after cancel: %v", err)
	}
	waited = async(func() error { return q.WaitLen(context.Background(), 2) })
	stillWaiting(t, waited)
	q.Close()
	if err := waitErr(t, waited); err != nil {
		t.Fatalf("WaitLen after Close: %v", err)
	}
}

// Close keeps what is queued for the consumer; pushes fail, waiting ones at
// once; PopAll drains, then reports ErrClosed, and a waiting one wakes.
func TestClose(t *testing.T) {
	q := queue.New(queue.Options[int]{MaxLen: 2})
	ctx := context.Background()
	_ = q.TryPush(1)
	_ = q.TryPush(2)
	pushed := async(func() error { return q.Push(ctx, 3) })
	stillWaiting(t, pushed)
	q.Close()
	q.Close() // a second close changes nothing
	if err := waitErr(t, pushed); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("waiting Push after Close: %v, want ErrClosed", err)
	}
	for name, push := range map[string]func() error{
		"TryPush":    func() error { return q.TryPush(4) },
		"TryPushAll": func() error { return q.TryPushAll([]int{4}) },
		"Push":       func() error { return q.Push(ctx, 4) },
	} {
		if err := push(); !errors.Is(err, queue.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if s := q.Stats(); !s.Closed || s.Len != 2 {
		t.Fatalf("stats after Close %+v", s)
	}
	if got := pop(t, q); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("popped %v after Close", got)
	}
	if _, err := q.PopAll(ctx, nil); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("PopAll on a closed, empty queue: %v", err)
	}

	q = queue.New(queue.Options[int]{})
	popped := async(func() error {
		_, err := q.PopAll(ctx, nil)
		return err
	})
	stillWaiting(t, popped)
	q.Close()
	if err := waitErr(t, popped); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("waiting PopAll after Close: %v, want ErrClosed", err)
	}
}

func TestCloseDiscard(t *testing.T) {
	q := bytesQueue(4, 0)
	_ = q.TryPush([]byte("abc"))
	_ = q.TryPush([]byte("de"))
	q.CloseDiscard()
	if s := q.Stats(); !s.Closed || s.Len != 0 || s.Bytes != 0 {
		t.Fatalf("stats after CloseDiscard %+v", s)
	}
	if _, err := q.PopAll(context.Background(), nil); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("PopAll after CloseDiscard: %v, want ErrClosed", err)
	}
	if err := q.TryPush([]byte("f")); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("TryPush after CloseDiscard: %v", err)
	}
}

func TestCloseIfEmpty(t *testing.T) {
	q := queue.New(queue.Options[int]{})
	_ = q.TryPush(1)
	if q.CloseIfEmpty() {
		t.Fatal("CloseIfEmpty closed a queue holding an item")
	}
	if err := q.TryPush(2); err != nil {
		t.Fatalf("push after a CloseIfEmpty that did not close: %v", err)
	}
	pop(t, q)
	if !q.CloseIfEmpty() {
		t.Fatal("CloseIfEmpty did not close an empty queue")
	}
	if err := q.TryPush(3); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("push after CloseIfEmpty: %v", err)
	}
	if !q.CloseIfEmpty() {
		t.Fatal("CloseIfEmpty on a closed queue: want true")
	}
}

// Many producers, blocking and not, and one batching consumer: every item
// arrives once, each producer's in its order, and the queue never holds
// more than its bound. Run with -race.
func TestConcurrentProducers(t *testing.T) {
	const (
		producers = 8
		perProd   = 2000
		maxLen    = 16
	)
	type item struct{ prod, n int }
	q := queue.New(queue.Options[item]{MaxLen: maxLen})
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()

	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for n := 0; n < perProd; {
				var err error
				if p%2 == 0 {
					err = q.Push(ctx, item{p, n})
				} else if err = q.TryPush(item{p, n}); errors.Is(err, queue.ErrFull) {
					err = q.WaitRoom(ctx) // then try again
					if err == nil {
						continue
					}
				}
				if err != nil {
					t.Errorf("producer %d: %v", p, err)
					return
				}
				n++
			}
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		q.Close()
		close(done)
	}()

	next := make([]int, producers)
	var batch []item
	total := 0
	for {
		var err error
		batch, err = q.PopAll(ctx, batch)
		if errors.Is(err, queue.ErrClosed) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) > maxLen {
			t.Fatalf("a batch of %d items from a queue bounded at %d", len(batch), maxLen)
		}
		for _, it := range batch {
			if it.n != next[it.prod] {
				t.Fatalf("producer %d: item %d arrived, want %d", it.prod, it.n, next[it.prod])
			}
			next[it.prod]++
			total++
		}
	}
	<-done
	if total != producers*perProd {
		t.Fatalf("%d items arrived, want %d", total, producers*perProd)
	}
}

// Closing while producers wait and the consumer stops: nobody is left
// waiting. Run with -race.
func TestCloseReleasesEveryone(t *testing.T) {
	q := queue.New(queue.Options[int]{MaxLen: 1})
	_ = q.TryPush(0)
	ctx := context.Background()
	var waits []<-chan error
	for i := range 10 {
		waits = append(waits, async(func() error { return q.Push(ctx, i) }))
		waits = append(waits, async(func() error { return q.WaitRoom(ctx) }))
	}
	time.Sleep(short)
	q.CloseDiscard()
	for _, w := range waits {
		if err := waitErr(t, w); !errors.Is(err, queue.ErrClosed) {
			t.Fatalf("after CloseDiscard: %v", err)
		}
	}
}

func BenchmarkTryPushPopAll(b *testing.B) {
	q := bytesQueue(4096, 64<<20)
	frame := make([]byte, 64)
	ctx := context.Background()
	var batch [][]byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = q.TryPush(frame)
		if i%64 == 63 {
			batch, _ = q.PopAll(ctx, batch)
		}
	}
}
