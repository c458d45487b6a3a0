package jetstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// Web Push subscriptions, cluster-wide (history.Pushes, docs/push.md),
// beside the device tokens in the bucket pd_devices:
//
//	pushes   every subscription (the token's SHA-256, the endpoint, the
//	         browser's keys), one JSON document changed only by
//	         compare-and-set, as the devices' table is
//	vapid    the VAPID key pair every relay signs with (history.PushKeys),
//	         written once by the first relay that asks
//
// One document for the subscriptions keeps the bound per device and the
// replacement of an endpoint atomic; they are made by people, a browser
// each, and a push reads them all anyway. Reads go to the leader, as the
// table's do: a subscription made on one relay is pushed by the next event
// on any other.
//
// The VAPID private key is kept in the bucket, as the conversations are
// kept in the stream: whoever may read the relays' NATS account may read
// both. Browsers subscribe with the public key of the relay they reach, so
// every relay must sign with the same pair.

const (
	pushesKey = "pushes"
	vapidKey  = "vapid"
)

type storedPush struct {
	Device    string `json:"sha256"` // the token's, hex
	Endpoint  string `json:"endpoint"`
	P256dh    string `json:"p256dh"`
	Auth      string `json:"auth"`
	Text      bool   `json:"text,omitempty"`
	CreatedAt int64  `json:"createdAt"` // Unix ns
}

type pushesTable struct {
	Pushes []storedPush `json:"pushes"`
}

var (
	_ history.Pushes   = (*Store)(nil)
	_ history.PushKeys = (*Store)(nil)
)

func (s *Store) changePushes(ctx context.Context, change func(t *pushesTable) error) error {
	kv, err := s.devicesKV(ctx)
	if err != nil {
		return err
	}
	return changeDoc(ctx, s, kv, pushesKey, "push subscriptions", func(t *pushesTable, _ bool) error {
		// Every change is one an earlier attempt leaves as it finds it
		// (a replacement, a removal): a retry needs no care.
		return change(t)
	}, func(t *pushesTable) error {
		return fmt.Errorf("jetstream history: push subscriptions: too many (%d): revoke unused devices", len(t.Pushes))
	})
}

// SavePush stores a subscription, replacing the one with its endpoint;
// a device keeps its newest history.MaxPushesPerDevice (history.Pushes).
func (s *Store) SavePush(ctx context.Context, p history.PushSubscription) error {
	if err := history.CheckPushEndpoint(p.Endpoint); err != nil {
		return fmt.Errorf("jetstream history: save push subscription: %w", err)
	}
	sp := storedPush{Device: hex.EncodeToString(p.Device[:]), Endpoint: p.Endpoint, P256dh: p.P256dh, Auth: p.Auth,
		Text: p.Text, CreatedAt: unixNano(p.CreatedAt)}
	return s.changePushes(ctx, func(t *pushesTable) error {
		t.Pushes = slices.DeleteFunc(t.Pushes, func(o storedPush) bool { return o.Endpoint == sp.Endpoint })
		t.Pushes = append(t.Pushes, sp)
		n := 0
		for _, o := range t.Pushes {
			if o.Device == sp.Device {
				n++
			}
		}
		// The oldest of the device's go first: they come first.
		for n > history.MaxPushesPerDevice {
			i := slices.IndexFunc(t.Pushes, func(o storedPush) bool { return o.Device == sp.Device })
			t.Pushes = slices.Delete(t.Pushes, i, i+1)
			n--
		}
		return nil
	})
}

// PushSubscriptions lists every subscription, oldest first
// (history.Pushes).
func (s *Store) PushSubscriptions(ctx context.Context) ([]history.PushSubscription, error) {
	kv, err := s.devicesKV(ctx)
	if err != nil {
		return nil, err
	}
	t, _, err := readDoc[pushesTable](ctx, s, kv, pushesKey, "push subscriptions")
	if err != nil {
		return nil, err
	}
	out := make([]history.PushSubscription, 0, len(t.Pushes))
	for _, sp := range t.Pushes {
		h, err := hex.DecodeString(sp.Device)
		if err != nil || len(h) != sha256.Size {
			return nil, fmt.Errorf("jetstream history: push subscriptions: %s has a bad token hash %q", sp.Endpoint, sp.Device)
		}
		p := history.PushSubscription{Endpoint: sp.Endpoint, P256dh: sp.P256dh, Auth: sp.Auth, Text: sp.Text, CreatedAt: fromUnixNano(sp.CreatedAt)}
		copy(p.Device[:], h)
		out = append(out, p)
	}
	return out, nil
}

// RemovePush removes the subscription of endpoint (history.Pushes).
func (s *Store) RemovePush(ctx context.Context, endpoint string) error {
	return s.removePushes(ctx, func(o storedPush) bool { return o.Endpoint == endpoint })
}

// RemoveDevicePushes removes the device's subscriptions (history.Pushes).
func (s *Store) RemoveDevicePushes(ctx context.Context, device [sha256.Size]byte) error {
	h := hex.EncodeToString(device[:])
	return s.removePushes(ctx, func(o storedPush) bool { return o.Device == h })
}

func (s *Store) removePushes(ctx context.Context, match func(storedPush) bool) error {
	return s.changePushes(ctx, func(t *pushesTable) error {
		n := len(t.Pushes)
		t.Pushes = slices.DeleteFunc(t.Pushes, match)
		if len(t.Pushes) == n {
			return errNoChange
		}
		return nil
	})
}

// VAPIDKeys returns the cluster's VAPID key pair, keeping mine when it
// has none yet (history.PushKeys). Two relays starting at once both
// create it: one wins, and the other reads the winner's.
func (s *Store) VAPIDKeys(ctx context.Context, mine history.VAPIDPair) (history.VAPIDPair, error) {
	kv, err := s.devicesKV(ctx)
	if err != nil {
		return history.VAPIDPair{}, err
	}
	data, err := json.Marshal(mine)
	if err != nil {
		return history.VAPIDPair{}, fmt.Errorf("jetstream history: VAPID keys: %w", err)
	}
	for range 4 {
		e, err := s.leaderGet(ctx, kv, vapidKey)
		if err != nil {
			return history.VAPIDPair{}, fmt.Errorf("jetstream history: VAPID keys: %w", err)
		}
		if e.rev != 0 {
			var kept history.VAPIDPair
			if err := json.Unmarshal(e.value, &kept); err != nil {
				return history.VAPIDPair{}, fmt.Errorf("jetstream history: VAPID keys: a bad pair (revision %d): %w", e.rev, err)
			}
			return kept, nil
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err = kv.Create(cctx, vapidKey, data)
		cancel()
		switch {
		case err == nil:
			return mine, nil
		case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch), passing(err):
			// Another relay's pair came first (or this one's ack was
			// lost): read what is kept.
		default:
			return history.VAPIDPair{}, fmt.Errorf("jetstream history: VAPID keys: %w", err)
		}
	}
	return history.VAPIDPair{}, errors.New("jetstream history: VAPID keys: the pair could be neither written nor read")
}
