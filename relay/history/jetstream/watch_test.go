package jetstream

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
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
	t.Parallel()
	_, nc := embedded(t)
	for _, mode := range []stall{unanswered, silent} {
		name := map[stall]string{unanswered: "unanswered", silent: "silent"}[mode]
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// 2 s: a watch the bucket does answer, on a busy machine, can
			// take longer than 300 ms, and was made again then too ("3
			// watches, want 2").
			s := openEmbedded(t, nc, "stall"+name, Options{watchWait: 2 * time.Second})
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
			tableChangeReported(t, devices, changed, "the watch made again")
		})
	}
}

// TestWatchGivesUpWithItsCaller: a read whose caller's context ends while
// the bucket stalls returns the caller's error at once, not after the
// retries.
func TestWatchGivesUpWithItsCaller(t *testing.T) {
	t.Parallel()
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

// gatedKV is a bucket that records the watchers it hands out, and holds
// every Watch after the first free ones until gate is closed.
type gatedKV struct {
	jetstream.KeyValue
	free     int
	gate     chan struct{}
	mu       sync.Mutex // guards n and watchers
	n        int        // Watch calls
	watchers []jetstream.KeyWatcher
	calls    chan int // the number of each Watch call, as it starts
}

func newGatedKV(kv jetstream.KeyValue, free int) *gatedKV {
	return &gatedKV{KeyValue: kv, free: free, gate: make(chan struct{}), calls: make(chan int, 16)}
}

func (kv *gatedKV) Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	kv.mu.Lock()
	kv.n++
	n := kv.n
	kv.mu.Unlock()
	kv.calls <- n
	if n > kv.free {
		select {
		case <-kv.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	w, err := kv.KeyValue.Watch(ctx, keys, opts...)
	if err == nil {
		kv.mu.Lock()
		kv.watchers = append(kv.watchers, w)
		kv.mu.Unlock()
	}
	return w, err
}

// lose ends the first watcher as nats.go does when it gives its ordered
// consumer up: its channel closes.
func (kv *gatedKV) lose(t *testing.T) {
	t.Helper()
	kv.mu.Lock()
	w := kv.watchers[0]
	kv.mu.Unlock()
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
}

func waitCall(t *testing.T, kv *gatedKV, n int) {
	t.Helper()
	for {
		select {
		case got := <-kv.calls:
			if got == n {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Watch call %d never came", n)
		}
	}
}

// TestStandingWatchComesBack: a standing watch whose watcher ends (nats.go
// gave its consumer up) is set up again, says so (a change of the devices
// table may have been missed), and reports the changes after it. Before,
// the watch ended for good, quietly.
func TestStandingWatchComesBack(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	changed := make(chan struct{}, 16)
	devices, gated := watchGatedDevices(t, nc, "comeback", func() { changed <- struct{}{} })
	gated.lose(t)
	waitCall(t, gated, 2)
	drain(changed)
	close(gated.gate)
	select {
	case <-changed: // the watch came back: the table may have changed
	case <-time.After(10 * time.Second):
		t.Fatal("the watch that came back did not say the table may have changed")
	}
	tableChangeReported(t, devices, changed, "the watch that came back")
}

// tableChangeReported changes the devices table and waits for the watch
// to report it on changed.
func tableChangeReported(t *testing.T, devices jetstream.KeyValue, changed chan struct{}, watch string) {
	t.Helper()
	drain(changed)
	if _, err := devices.Put(context.Background(), devicesTableKey, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not report a change of the table", watch)
	}
}

// watchGatedDevices opens a store on nc, in namespace ns, whose devices
// bucket is a gatedKV with one free Watch, has it watch the table with
// changed until the test ends, and waits for that first Watch.
func watchGatedDevices(t *testing.T, nc *nats.Conn, ns string, changed func()) (jetstream.KeyValue, *gatedKV) {
	t.Helper()
	s := openEmbedded(t, nc, ns, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	devices, err := s.devicesKV(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gated := newGatedKV(devices, 1)
	s.ext.devices = gated
	if err := s.WatchDevices(ctx, changed); err != nil {
		t.Fatal(err)
	}
	waitCall(t, gated, 1)
	return devices, gated
}

// goneHooks records the relays the cluster says are gone.
type goneHooks struct {
	quietHooks
	gone chan string
}

func (h goneHooks) RelayGone(id string) { h.gone <- id }

// TestLeaseWatchComesBack: a relay whose watch of the leases ended, and
// came back after another relay's lease went, hears of that relay gone:
// it lists the leases again and misses none. Before, its watch ended for
// good and no later lapse was ever heard: the conversations of a relay
// that died were never taken over.
func TestLeaseWatchComesBack(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	// B first: A's start lists it.
	b := startCluster(t, openEmbedded(t, nc, "leases", Options{}), ClusterOptions{Lease: 4 * time.Second}, quietHooks{})
	bID := b.ID()
	hooks := goneHooks{gone: make(chan string, 16)}
	a := newCluster(t, openEmbedded(t, nc, "leases", Options{}), ClusterOptions{Lease: 4 * time.Second})
	gated := newGatedKV(a.relays, 2) // Start's watch and its list
	a.relays = gated
	if err := a.Start(hooks); err != nil {
		t.Fatal(err)
	}
	gated.lose(t)
	waitCall(t, gated, 3)
	// B goes while A does not watch.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	close(gated.gate)
	select {
	case id := <-hooks.gone:
		if id != bID {
			t.Fatalf("A heard %s gone, want B (%s)", id, bID)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("A never heard that B went while its watch was down")
	}
}

// TestStandingWatchEndsWithItsConnection: a standing watch whose
// connection is closed for good ends; it does not try to watch again.
func TestStandingWatchEndsWithItsConnection(t *testing.T) {
	t.Parallel()
	e, _ := embedded(t)
	nc, err := e.Connect("closing")
	if err != nil {
		t.Fatal(err)
	}
	_, gated := watchGatedDevices(t, nc, "closing", func() {})
	nc.Close()
	select {
	case n := <-gated.calls:
		t.Fatalf("Watch call %d after the connection was closed", n)
	case <-time.After(2 * time.Second):
	}
}
