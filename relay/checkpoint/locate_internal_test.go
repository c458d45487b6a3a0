package checkpoint

import (
	"context"
	"sync"
	"testing"
)

// TestLocateAtOnce: conversations that start together in one new plain
// folder each find its repository; without findMu two of them ran git init
// on it at once and one failed ("could not lock config file").
func TestLocateAtOnce(t *testing.T) {
	t.Parallel()
	s, err := New(t.TempDir())
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			if _, err := s.locate(context.Background(), dir); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
