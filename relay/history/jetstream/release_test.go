package jetstream

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// lines is a slog handler that keeps every record's message and error.
type lines struct {
	mu  sync.Mutex // guards got
	got []string
}

func (l *lines) Enabled(context.Context, slog.Level) bool { return true }
func (l *lines) Handle(_ context.Context, r slog.Record) error {
	s := r.Message
	r.Attrs(func(a slog.Attr) bool {
		s += " " + a.String()
		return true
	})
	l.mu.Lock()
	l.got = append(l.got, s)
	l.mu.Unlock()
	return nil
}
func (l *lines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *lines) WithGroup(string) slog.Handler      { return l }

func (l *lines) matching(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var m []string
	for _, s := range l.got {
		if strings.Contains(s, sub) {
			m = append(m, s)
		}
	}
	return m
}

// TestClusterReleaseRace: a relay releasing a conversation (a delete, or
// its shutdown) while another relay takes it over (the first's lease
// lapsed unbeknown to it) finds the record another's: refused with 10071,
// or on a 3-node cluster with 10164 while the other's write is in flight.
// Either way the record is the other relay's and stays; neither is a
// failure (Stop returned one for 10164, Release logged it).
func TestClusterReleaseRace(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	nc := clusterConn(t, c, 0)
	resetDefault(t, nc)
	logs := &lines{}
	st := openR3(t, clusterConn(t, c, 0), Options{})
	a := startCluster(t, st, ClusterOptions{Logger: slog.New(logs)}, quietHooks{})
	other := openR3(t, clusterConn(t, c, 1), Options{})
	b, err := NewCluster(context.Background(), other, ClusterOptions{Lease: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Another relay writes the record at the moment this one deletes it.
	race := func(id string, release func()) {
		a.mu.Lock()
		rev := a.claimed[token(id)]
		a.mu.Unlock()
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = b.owners.Update(ctx, token(id), []byte("another-relay"), rev) })
		release()
		wg.Wait()
	}
	const rounds = 40
	for i := range rounds {
		id := fmt.Sprintf("release-%d", i)
		if owner, _, err := a.Claim(ctx, id); err != nil || owner != a.ID() {
			t.Fatalf("claim %s: %q, %v", id, owner, err)
		}
		race(id, func() { a.Release(ctx, id) })
	}
	if bad := logs.matching("release a conversation"); len(bad) > 0 {
		t.Errorf("%d of %d releases that lost the record to another relay failed:\n%s", len(bad), rounds, strings.Join(bad, "\n"))
	}

	// Stop, as each of its records is taken over.
	var ids []string
	for i := range rounds {
		id := fmt.Sprintf("stop-%d", i)
		if owner, _, err := a.Claim(ctx, id); err != nil || owner != a.ID() {
			t.Fatalf("claim %s: %q, %v", id, owner, err)
		}
		ids = append(ids, id)
	}
	a.mu.Lock()
	revs := make(map[string]uint64, len(ids))
	for _, id := range ids {
		revs[id] = a.claimed[token(id)]
	}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { _, _ = b.owners.Update(ctx, token(id), []byte("another-relay"), revs[id]) })
	}
	if err := a.Stop(ctx); err != nil {
		t.Errorf("stop while another relay takes the conversations over: %v", err)
	}
	wg.Wait()
	for _, id := range ids {
		if e, err := b.owners.Get(ctx, token(id)); err == nil && string(e.Value()) != "another-relay" && string(e.Value()) != a.ID() {
			t.Errorf("%s's owner record says %q", id, e.Value())
		}
	}
}
