package historytest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// testPushes checks history.Pushes on a store that keeps devices: a
// subscription round-trips, the same endpoint is replaced, each is
// removed by endpoint, a device keeps its newest MaxPushesPerDevice, and
// revoking a device removes its subscriptions and no other's.
func testPushes(t *testing.T, d history.Devices) {
	p, ok := d.(history.Pushes)
	if !ok {
		t.Skip("this store keeps no push subscriptions")
	}
	ctx := context.Background()
	pixel, laptop := device("Pixel", "controller", 0), device("laptop", "viewer", time.Second)
	for _, dev := range []history.Device{pixel, laptop} {
		if err := d.AddDevice(ctx, dev); err != nil {
			t.Fatal(err)
		}
	}
	sub := func(dev history.Device, n int, text bool) history.PushSubscription {
		return history.PushSubscription{Device: dev.Hash, Endpoint: fmt.Sprintf("https://push.example/%s/%d", dev.Name, n),
			P256dh: "BKey" + dev.Name, Auth: "auth" + dev.Name, Text: text, CreatedAt: base.Add(time.Duration(n) * time.Second)}
	}
	endpoints := func() []string {
		t.Helper()
		subs, err := p.PushSubscriptions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range subs {
			out = append(out, s.Endpoint)
		}
		slices.Sort(out)
		return out
	}
	a, b := sub(pixel, 1, false), sub(laptop, 2, true)
	for _, s := range []history.PushSubscription{a, b} {
		if err := p.SavePush(ctx, s); err != nil {
			t.Fatalf("SavePush: %v", err)
		}
	}
	subs, err := p.PushSubscriptions(ctx)
	if err != nil || len(subs) != 2 {
		t.Fatalf("PushSubscriptions: %v, %v", subs, err)
	}
	for i, want := range []history.PushSubscription{a, b} {
		got := subs[i]
		if got.Device != want.Device || got.Endpoint != want.Endpoint || got.P256dh != want.P256dh || got.Auth != want.Auth ||
			got.Text != want.Text || !got.CreatedAt.Equal(want.CreatedAt) {
			t.Fatalf("subscription %d: %+v, want %+v", i, got, want)
		}
	}
	// The same endpoint subscribed again (new keys, another token) is
	// replaced, not doubled.
	a2 := a
	a2.Device, a2.P256dh, a2.CreatedAt = laptop.Hash, "BNewKey", base.Add(3*time.Second)
	if err := p.SavePush(ctx, a2); err != nil {
		t.Fatal(err)
	}
	if subs, _ := p.PushSubscriptions(ctx); len(subs) != 2 || subs[1].Endpoint != a.Endpoint || subs[1].P256dh != "BNewKey" || subs[1].Device != laptop.Hash {
		t.Fatalf("after a resubscription: %+v", subs)
	}
	if err := p.SavePush(ctx, history.PushSubscription{Device: pixel.Hash, Endpoint: "http://push.example/plain"}); err == nil {
		t.Fatal("an http endpoint was saved")
	}
	if err := p.RemovePush(ctx, b.Endpoint); err != nil {
		t.Fatal(err)
	}
	if err := p.RemovePush(ctx, "https://push.example/never"); err != nil {
		t.Fatalf("removing a missing subscription: %v", err)
	}
	if got := endpoints(); !slices.Equal(got, []string{a.Endpoint}) {
		t.Fatalf("after RemovePush: %v", got)
	}

	// A device keeps its newest MaxPushesPerDevice.
	for n := 10; n < 10+history.MaxPushesPerDevice+2; n++ {
		if err := p.SavePush(ctx, sub(pixel, n, false)); err != nil {
			t.Fatal(err)
		}
	}
	got := endpoints()
	if len(got) != 1+history.MaxPushesPerDevice || slices.Contains(got, sub(pixel, 10, false).Endpoint) ||
		slices.Contains(got, sub(pixel, 11, false).Endpoint) || !slices.Contains(got, sub(pixel, 12, false).Endpoint) {
		t.Fatalf("after %d subscriptions of one device: %v", history.MaxPushesPerDevice+2, got)
	}

	// Revoking Pixel removes its subscriptions, and not the laptop's.
	if err := d.RevokeDevice(ctx, pixel.Name); err != nil {
		t.Fatal(err)
	}
	if got := endpoints(); !slices.Equal(got, []string{a.Endpoint}) {
		t.Fatalf("after revoking Pixel: %v, want the laptop's %s alone", got, a.Endpoint)
	}
	if err := p.RemoveDevicePushes(ctx, laptop.Hash); err != nil {
		t.Fatal(err)
	}
	if got := endpoints(); len(got) != 0 {
		t.Fatalf("after RemoveDevicePushes: %v", got)
	}
	if err := p.RemoveDevicePushes(ctx, sha256.Sum256([]byte("nobody"))); err != nil {
		t.Fatal(err)
	}
}
