package history

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"
)

// PushSubscription is a browser's Web Push subscription (docs/push.md):
// where the push service takes messages for it, and the keys that encrypt
// them for that browser alone (RFC 8291). It belongs to the token that
// subscribed: a device token, or the relay's own.
type PushSubscription struct {
	// Device is the SHA-256 of the token that subscribed (a device's, or
	// the relay's own token's); its revocation removes the subscription.
	Device   [sha256.Size]byte
	Endpoint string // the push service's URL for this browser (https)
	P256dh   string // the browser's P-256 public key, base64url
	Auth     string // the browser's 16-byte authentication secret, base64url
	// Text: the user asked for the conversation's words in the
	// notification (the question, the reply's start); false: only which
	// conversation waits.
	Text      bool
	CreatedAt time.Time
}

// Pushes keeps Web Push subscriptions, per device token. A store that
// keeps device tokens (Devices) keeps them beside them, and its
// RevokeDevice removes a device's subscriptions with it. Its methods are
// safe for concurrent use.
type Pushes interface {
	// SavePush stores a subscription, replacing the one with the same
	// endpoint (a browser subscribes again with new keys, or another
	// token took it over). A device keeps at most MaxPushesPerDevice:
	// its oldest go.
	SavePush(ctx context.Context, s PushSubscription) error
	// PushSubscriptions lists every subscription, oldest first.
	PushSubscriptions(ctx context.Context) ([]PushSubscription, error)
	// RemovePush removes the subscription of endpoint; a missing one is
	// not an error.
	RemovePush(ctx context.Context, endpoint string) error
	// RemoveDevicePushes removes every subscription of the device whose
	// token hashes to device.
	RemoveDevicePushes(ctx context.Context, device [sha256.Size]byte) error
}

// VAPIDPair is a VAPID key pair (RFC 8292) as the relay keeps it
// (relay.VAPIDKeys): the public key's uncompressed point and the private
// scalar, base64url without padding.
type VAPIDPair struct {
	Public  string `json:"publicKey"`
	Private string `json:"privateKey"`
}

// PushKeys is a Pushes that several relays share (a cluster's store:
// JetStream's, the in-memory cluster's). A browser's subscription names
// the public key it was made with, and its push service refuses a push
// signed with another, so every relay that may push to it must sign with
// that pair: the store keeps it beside the subscriptions.
type PushKeys interface {
	// VAPIDKeys returns the key pair kept; when none is kept yet, it
	// keeps mine and returns it. Of relays asking at once, one's pair is
	// kept and each gets that one.
	VAPIDKeys(ctx context.Context, mine VAPIDPair) (VAPIDPair, error)
}

// MaxPushesPerDevice bounds a device's subscriptions (a browser profile
// each): a token shared by more browsers keeps the newest.
const MaxPushesPerDevice = 16

// MaxPushEndpoint is the longest endpoint URL kept, in bytes.
const MaxPushEndpoint = 2048

// CheckPushEndpoint says what is wrong with a push service's URL, or nil:
// it must be an absolute https URL (the relay posts to it).
func CheckPushEndpoint(endpoint string) error {
	if endpoint == "" {
		return errors.New("the subscription has no endpoint")
	}
	if len(endpoint) > MaxPushEndpoint {
		return fmt.Errorf("the endpoint is longer than %d bytes", MaxPushEndpoint)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("the endpoint is not a URL: %w", err)
	}
	if u.Scheme != "https" || u.Host == "" || u.User != nil {
		return fmt.Errorf("the endpoint %q is not an https URL of a push service", endpoint)
	}
	return nil
}

// trimPushes keeps the newest MaxPushesPerDevice subscriptions of device
// in subs (oldest first) and returns the rest, in order.
func trimPushes(subs []PushSubscription, device [sha256.Size]byte) []PushSubscription {
	n := 0
	for _, s := range subs {
		if s.Device == device {
			n++
		}
	}
	out := subs[:0]
	for _, s := range subs {
		if s.Device == device && n > MaxPushesPerDevice {
			n--
			continue
		}
		out = append(out, s)
	}
	return out
}

func (m *Memory) SavePush(ctx context.Context, s PushSubscription) error {
	if err := CheckPushEndpoint(s.Endpoint); err != nil {
		return fmt.Errorf("history: save push subscription: %w", err)
	}
	m.devMu.Lock()
	defer m.devMu.Unlock()
	m.pushes = slices.DeleteFunc(m.pushes, func(o PushSubscription) bool { return o.Endpoint == s.Endpoint })
	m.pushes = trimPushes(append(m.pushes, s), s.Device)
	return nil
}

func (m *Memory) PushSubscriptions(ctx context.Context) ([]PushSubscription, error) {
	m.devMu.Lock()
	defer m.devMu.Unlock()
	return slices.Clone(m.pushes), nil
}

func (m *Memory) RemovePush(ctx context.Context, endpoint string) error {
	m.devMu.Lock()
	defer m.devMu.Unlock()
	m.pushes = slices.DeleteFunc(m.pushes, func(o PushSubscription) bool { return o.Endpoint == endpoint })
	return nil
}

// VAPIDKeys keeps the first pair it is given (PushKeys): the relays of
// an in-memory cluster share one Memory, and so one pair.
func (m *Memory) VAPIDKeys(ctx context.Context, mine VAPIDPair) (VAPIDPair, error) {
	m.devMu.Lock()
	defer m.devMu.Unlock()
	if m.vapid == nil {
		m.vapid = &mine
	}
	return *m.vapid, nil
}

func (m *Memory) RemoveDevicePushes(ctx context.Context, device [sha256.Size]byte) error {
	m.devMu.Lock()
	defer m.devMu.Unlock()
	m.removeDevicePushesLocked(device)
	return nil
}

func (m *Memory) removeDevicePushesLocked(device [sha256.Size]byte) {
	m.pushes = slices.DeleteFunc(m.pushes, func(o PushSubscription) bool { return o.Device == device })
}
