package sqlite

import (
	"context"
	"testing"
)

// TestReadersKeepASmallPageCache: the connections that replay histories
// keep readerCacheKiB of pages, the writer SQLite's default (2,000 KiB).
// With the default, a reader kept the last 2 MB of the last replay in the
// process for good.
func TestReadersKeepASmallPageCache(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{ReadConns: 2})
	defer s.Close()
	ctx := context.Background()
	var reader, writer int
	if err := s.r.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&reader); err != nil {
		t.Fatal(err)
	}
	if err := s.w.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&writer); err != nil {
		t.Fatal(err)
	}
	if reader != -readerCacheKiB {
		t.Errorf("a reader's cache_size is %d, want %d (KiB)", reader, -readerCacheKiB)
	}
	if writer != -2000 {
		t.Errorf("the writer's cache_size is %d, want SQLite's default -2000", writer)
	}
}
