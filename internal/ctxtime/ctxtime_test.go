package ctxtime

import (
	"context"
	"testing"
	"time"
)

// TestSleep: a pause runs its course; the end of its context ends it at
// once, with the context's error.
func TestSleep(t *testing.T) {
	start := time.Now()
	if err := Sleep(context.Background(), 20*time.Millisecond); err != nil || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("Sleep = %v after %v", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start = time.Now()
	if err := Sleep(ctx, time.Hour); err != context.Canceled {
		t.Fatalf("Sleep with its context ended = %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("Sleep with its context ended took %v", d)
	}
}
