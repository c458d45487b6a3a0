package jetstream

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/historytest"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// The device tokens and the spend ledger (devices.go, spend.go): the
// conformance suite's device checks on one in-process node and on a real
// 3-node cluster (the spend checks are in historytest.Run, which the
// store's conformance tests run), and what only several relays sharing a
// cluster can show: a revocation seen by every store at once, and spend
// added to one hour by two stores at once, none lost.

func TestEmbeddedDevices(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	n := 0
	historytest.RunDevices(t, func(t *testing.T) (history.Devices, func() error) {
		n++
		s, err := Open(context.Background(), nc, withStreams(t, Options{Replicas: 1, Namespace: fmt.Sprintf("d%d", n)}))
		if err != nil {
			t.Fatal(err)
		}
		return s, s.Close
	})
}

func TestClusterDevices(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	nc := clusterConn(t, c, 0)
	historytest.RunDevices(t, func(t *testing.T) (history.Devices, func() error) {
		resetDefault(t, nc)
		s := openR3(t, nc, Options{})
		return s, s.Close
	})
}

// twoRelays opens two stores of one history through two connections, to
// two different nodes of a cluster: two relays.
func twoRelays(t *testing.T) (a, b *Store) {
	c := natstest.Start(t, 3)
	nc := clusterConn(t, c, 0)
	resetDefault(t, nc)
	return openR3(t, nc, Options{}), openR3(t, clusterConn(t, c, 1), Options{})
}

// TestClusterRevocationEverywhere: a device added on one relay lets its
// token in on the other; once revoked on the first, the second refuses it
// at the next look-up, lists it no more (what the relay's poll closes live
// connections by, with 4003), and its watch tells it within a second.
func TestClusterRevocationEverywhere(t *testing.T) {
	t.Parallel()
	a, b := twoRelays(t)
	ctx := context.Background()
	changes := make(chan struct{}, 16)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := b.WatchDevices(wctx, func() {
		select {
		case changes <- struct{}{}:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	drain := func() {
		for {
			select {
			case <-changes:
			default:
				return
			}
		}
	}
	waitChange := func(what string) {
		t.Helper()
		select {
		case <-changes:
		case <-time.After(2 * time.Second):
			t.Fatalf("relay B's watch did not see %s", what)
		}
	}

	time.Sleep(100 * time.Millisecond)
	drain()
	dev := history.Device{Name: "Pixel", Role: "controller", Hash: sha256.Sum256([]byte("pdt_pixel")), CreatedAt: time.Now().UTC()}
	if err := a.AddDevice(ctx, dev); err != nil {
		t.Fatal(err)
	}
	waitChange("the add")
	if got, err := b.DeviceByHash(ctx, dev.Hash); err != nil || got.Name != "Pixel" || got.Role != "controller" {
		t.Fatalf("relay B looking up the new token: %+v, %v", got, err)
	}
	if err := b.TouchDevice(ctx, "Pixel", dev.CreatedAt.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if devs, err := a.Devices(ctx); err != nil || len(devs) != 1 || !devs[0].LastUsed.Equal(dev.CreatedAt.Add(time.Minute)) {
		t.Fatalf("relay A's list after B's use: %+v, %v", devs, err)
	}

	drain()
	if err := a.RevokeDevice(ctx, "Pixel"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DeviceByHash(ctx, dev.Hash); !errors.Is(err, history.ErrNoDevice) {
		t.Fatalf("relay B looking up the revoked token at once: %v", err)
	}
	if devs, err := b.Devices(ctx); err != nil || len(devs) != 0 {
		t.Fatalf("relay B's list after the revocation: %+v, %v", devs, err)
	}
	waitChange("the revocation")
	if err := b.RevokeDevice(ctx, "Pixel"); !errors.Is(err, history.ErrNoDevice) {
		t.Fatalf("revoking on B what A revoked: %v", err)
	}
}

// TestClusterDevicesRace: two relays adding devices at once, each a name
// of its own and one name both want: every distinct one is kept, and the
// shared name exactly once.
func TestClusterDevicesRace(t *testing.T) {
	t.Parallel()
	a, b := twoRelays(t)
	ctx := context.Background()
	const n = 15
	var wg sync.WaitGroup
	var mu sync.Mutex
	shared := 0
	for i, s := range []*Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range n {
				name := fmt.Sprintf("r%d-%d", i, k)
				if err := s.AddDevice(ctx, history.Device{Name: name, Role: "viewer", Hash: sha256.Sum256([]byte(name)), CreatedAt: time.Now()}); err != nil {
					t.Errorf("AddDevice(%s): %v", name, err)
				}
				err := s.AddDevice(ctx, history.Device{Name: fmt.Sprintf("both-%d", k), Role: "viewer", Hash: sha256.Sum256(fmt.Appendf(nil, "%d-%d", i, k)), CreatedAt: time.Now()})
				switch {
				case err == nil:
					mu.Lock()
					shared++
					mu.Unlock()
				case !errors.Is(err, history.ErrDeviceExists):
					t.Errorf("AddDevice(both-%d): %v", k, err)
				}
			}
		}()
	}
	wg.Wait()
	devs, err := a.Devices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 3*n || shared != n {
		t.Fatalf("%d devices (want %d), the shared names added %d times (want %d)", len(devs), 3*n, shared, n)
	}
}

// TestClusterSpendRace: two relays adding spend to the same hour at once,
// 40 additions each: the ledger holds the sum of all 80.
func TestClusterSpendRace(t *testing.T) {
	t.Parallel()
	a, b := twoRelays(t)
	testSpendRace(t, a, b)
}

func TestEmbeddedSpendRace(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	a := openEmbedded(t, nc, "race", Options{})
	b := openEmbedded(t, nc, "race", Options{})
	testSpendRace(t, a, b)
}

func testSpendRace(t *testing.T, a, b *Store) {
	ctx := context.Background()
	hour := history.SpendHour(time.Now())
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen := make(chan struct{}, 1)
	if err := b.WatchSpend(wctx, func() {
		select {
		case seen <- struct{}{}:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	var wg sync.WaitGroup
	for i, s := range []*Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range n {
				sp := history.Spend{At: hour.Add(time.Duration(i*n+k) * time.Second), NanoAIU: int64(1 + i*1000)}
				if err := s.Write(ctx, history.Batch{Spend: []history.Spend{sp}}); err != nil {
					t.Errorf("Write: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-seen:
	case <-time.After(2 * time.Second):
		t.Fatal("b's WatchSpend did not report a's spend")
	}
	for _, s := range []*Store{a, b} {
		got, err := s.Spent(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		want := history.Spend{At: hour.Add((2*n - 1) * time.Second), NanoAIU: n * (1 + 1001)}
		if len(got) != 1 || got[0].NanoAIU != want.NanoAIU || !got[0].At.Equal(want.At) {
			t.Fatalf("Spent: %+v, want [%+v]", got, want)
		}
	}
}
