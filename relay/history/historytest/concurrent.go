package historytest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// The suite's check of a store used from many goroutines at once.

// testConcurrent streams several conversations at once while others replay
// and list, as the relay does; run it with -race.
func testConcurrent(t *testing.T, s history.Store) {
	const writers, batches, perBatch = 4, 40, 5
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers+1)
	stopReaders := make(chan struct{})
	var readers sync.WaitGroup
	for w := range writers {
		id := fmt.Sprintf("w%d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := conv(id, 0)
			for i := range batches {
				from := int64(i*perBatch + 1)
				c.LastSeq = from + perBatch - 1
				c.UpdatedAt = base.Add(time.Duration(i) * time.Second)
				if err := s.Write(ctx, history.Batch{Conversations: []history.Conversation{c}, Events: events(id, from, c.LastSeq)}); err != nil {
					errs <- fmt.Errorf("writer %s: %w", id, err)
					return
				}
			}
		}()
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stopReaders:
					return
				default:
				}
				var last int64
				err := s.Events(ctx, id, 0, func(e history.Event) error {
					if e.Seq != last+1 {
						return fmt.Errorf("reader %s: seq %d after %d", id, e.Seq, last)
					}
					last = e.Seq
					return nil
				})
				if err == nil {
					// The conversation row is written in the same batch as
					// its events, so it never lags behind what was read.
					var c history.Conversation
					c, err = s.Conversation(ctx, id)
					if errors.Is(err, history.ErrNotFound) && last == 0 {
						err = nil
					} else if err == nil && c.LastSeq < last {
						err = fmt.Errorf("reader %s: conversation says last seq %d after reading %d", id, c.LastSeq, last)
					}
				}
				if err == nil {
					_, err = s.Conversations(ctx)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stopReaders)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w := range writers {
		id := fmt.Sprintf("w%d", w)
		checkEvents(t, readAll(t, s, id, 0), events(id, 1, batches*perBatch))
		if c := getConv(t, s, id); c.LastSeq != batches*perBatch {
			t.Errorf("%s: LastSeq %d, want %d", id, c.LastSeq, batches*perBatch)
		}
	}
}
