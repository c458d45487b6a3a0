// Package ctxtime pauses for a while unless a context ends first: the
// scripted agent's sleep steps and the benchmarks' waits, which an abort or
// an interrupt must end at once.
package ctxtime

import (
	"context"
	"time"
)

// Sleep pauses for d, or until ctx ends: then it returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
