package jetstream

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestEachRunsEveryOneOnceWithinTheBound: each runs fn once for every
// index, none for n 0, never more than MaxInflight at once (the caller's
// own run counts), and returns only when all have ended.
func TestEachRunsEveryOneOnceWithinTheBound(t *testing.T) {
	for _, bound := range []int{1, 2, 32} {
		for _, n := range []int{0, 1, 2, 5, 40} {
			s := &Store{inflight: make(chan struct{}, bound)}
			var mu sync.Mutex
			ran := make([]int, n)
			var now, most atomic.Int32
			s.each(n, func(i int) {
				c := now.Add(1)
				for {
					m := most.Load()
					if c <= m || most.CompareAndSwap(m, c) {
						break
					}
				}
				mu.Lock()
				ran[i]++
				mu.Unlock()
				now.Add(-1)
			})
			for i, r := range ran {
				if r != 1 {
					t.Errorf("bound %d, n %d: fn(%d) ran %d times", bound, n, i, r)
				}
			}
			if m := int(most.Load()); m > bound {
				t.Errorf("bound %d, n %d: %d ran at once", bound, n, m)
			}
			if len(s.inflight) != 0 {
				t.Errorf("bound %d, n %d: %d slots still taken", bound, n, len(s.inflight))
			}
		}
	}
}
