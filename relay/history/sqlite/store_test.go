package sqlite

import (
	"context"
	"testing"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/historytest"
)

// quiet keeps the store's logs out of test output.
func quiet() Options { return Options{Logger: discardLogger()} }

func openStore(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = discardLogger()
	}
	s, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	historytest.Run(t, func(t *testing.T) history.Store { return openStore(t, t.TempDir(), Options{}) })
}

// Small pages make every read in the suite cross page boundaries.
func TestConformanceSmallPages(t *testing.T) {
	t.Parallel()
	historytest.Run(t, func(t *testing.T) history.Store {
		return openStore(t, t.TempDir(), Options{PageEvents: 7, PageBytes: 300, ReadConns: 1})
	})
}
