package jetstream

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// stall is how a bucket fails a watcher while its stream elects a leader.
type stall int

const (
	// unanswered: the consumer's creation is never answered; Watch returns
	// when its context ends.
	unanswered stall = iota
	// silent: the consumer is created and never delivers.
	silent
)

// stallingKV is a bucket whose first stalls Watch calls stall as mode says;
// the later ones reach the real bucket.
type stallingKV struct {
	jetstream.KeyValue
	mode    stall
	stalls  int32
	watches atomic.Int32
}

func (kv *stallingKV) Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	if kv.watches.Add(1) > kv.stalls {
		return kv.KeyValue.Watch(ctx, keys, opts...)
	}
	if kv.mode == silent {
		return &silentWatcher{updates: make(chan jetstream.KeyValueEntry)}, nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// silentWatcher never delivers anything.
type silentWatcher struct {
	updates chan jetstream.KeyValueEntry
	once    sync.Once
}

func (w *silentWatcher) Updates() <-chan jetstream.KeyValueEntry { return w.updates }
func (w *silentWatcher) Stop() error {
	w.once.Do(func() { close(w.updates) })
	return nil
}

// TestStalledWatchIsMadeAgain: a watcher the bucket does not answer, or
// that never delivers, is abandoned after watchWait and made again, for a
// read (the ledger's, at a relay's start); a standing watch (the device
// table's) whose creation is not answered is made again too. Unbounded, either waited for its caller's whole
// context: a relay starting beside another on a new cluster failed its
// start-up after a minute.
func TestStalledWatchIsMadeAgain(t *testing.T) {
	_, nc := embedded(t)
	for _, mode := range []stall{unanswered, silent} {
		name := map[stall]string{unanswered: "unanswered", silent: "silent"}[mode]
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s := openEmbedded(t, nc, "stall"+name, Options{watchWait: 300 * time.Millisecond})
			at := time.Now().UTC().Truncate(time.Second)
			if err := s.Write(ctx, history.Batch{Spend: []history.Spend{{At: at, NanoAIU: 7}}}); err != nil {
				t.Fatal(err)
			}

			// The ledger's read.
			spend := &stallingKV{KeyValue: s.ext.spend, mode: mode, stalls: 2}
			s.ext.spend = spend
			// A store that did not write it knows the spend only from the bucket.
			s.ext.spendSeen, s.ext.pending = nil, nil
			got, err := s.Spent(ctx, time.Time{})
			if err != nil {
				t.Fatalf("Spent: %v", err)
			}
			if len(got) != 1 || got[0].NanoAIU != 7 || !got[0].At.Equal(at) {
				t.Fatalf("Spent: %+v, want 7 nanoAIU at %v", got, at)
			}
			if n := spend.watches.Load(); n != 3 {
				t.Fatalf("%d watches, want 3: two stalled, one read", n)
			}

			// A standing watch. One created and then silent is the
			// library's to mend: an ordered consumer that misses its
			// heartbeats is made again by nats.go.
			if mode == silent {
				return
			}
			devices, err := s.devicesKV(ctx)
			if err != nil {
				t.Fatal(err)
			}
			stalling := &stallingKV{KeyValue: devices, mode: mode, stalls: 1}
			s.ext.devices = stalling
			changed := make(chan struct{}, 16)
			wctx, stop := context.WithCancel(ctx)
			defer stop()
			if err := s.WatchDevices(wctx, func() { changed <- struct{}{} }); err != nil {
				t.Fatalf("WatchDevices: %v", err)
			}
			if n := stalling.watches.Load(); n != 2 {
				t.Fatalf("%d watches, want 2: one stalled, one set up", n)
			}
			drain(changed)
			if _, err := devices.Put(ctx, devicesTableKey, []byte("{}")); err != nil {
				t.Fatal(err)
			}
			select {
			case <-changed:
			case <-time.After(5 * time.Second):
				t.Fatal("the watch made again did not report a change of the table")
			}
		})
	}
}

// TestWatchGivesUpWithItsCaller: a read whose caller's context ends while
// the bucket stalls returns the caller's error at once, not after the
// retries.
func TestWatchGivesUpWithItsCaller(t *testing.T) {
	_, nc := embedded(t)
	s := openEmbedded(t, nc, "giveup", Options{watchWait: time.Hour})
	if _, err := s.spendKV(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.ext.spend = &stallingKV{KeyValue: s.ext.spend, mode: unanswered, stalls: 1 << 30}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Spent(ctx, time.Time{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Spent: %v, want the caller's deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Spent returned after %v", d)
	}
}

func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
