package sqlite

import (
	"context"
	"fmt"
	"testing"

	"modernc.org/sqlite"
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

// TestCheckLeavesTheWriterCacheEmpty: Open's quick_check reads the whole
// file on a connection of its own, so the writer's cache holds none of
// it after Open. Through the writer, a history of a few MiB left its
// 2,000 KiB cache full of pages no commit needed.
func TestCheckLeavesTheWriterCacheEmpty(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	fill(t, s, "big", 30000) // about 5 MiB of events
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, Options{})
	defer s.Close()
	ctx := context.Background()
	conn, err := s.w.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var used int
	if err := conn.Raw(func(dc any) error {
		st, ok := dc.(sqlite.DBStatus)
		if !ok {
			return fmt.Errorf("the driver's connection %T has no Status", dc)
		}
		used, _, err = st.Status(sqlite.DBStatusCacheUsed, false)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if used > 512<<10 {
		t.Errorf("the writer's page cache holds %d KiB after Open, want the check's pages elsewhere (under 512 KiB)", used>>10)
	}
}
